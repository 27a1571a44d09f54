//! Grid evaluation: a widget's outputs computed at every combination of its inputs, factored
//! into the tables the data file stores, and the comparison of a data file with the values
//! computed natively.
//!
//! Combinations are numbered with the first input varying slowest. An input is a dependency
//! of an output when changing that input alone ever changes the output's value; as every
//! combination is evaluated, the factoring is exact, not a guess from a sample. Each output is
//! stored as a table over its dependencies only, its distinct values once each.

use std::collections::HashMap;

use super::{At, Control, Data, Output, OutputData, Widget, WidgetError};

impl Widget {
    /// How many combinations of inputs there are.
    pub fn combinations(&self) -> usize {
        self.inputs.iter().map(|i| i.options.len()).product()
    }

    /// The combination every input starts at.
    pub fn default_at(&self) -> At {
        At(self.inputs.iter().map(|i| i.default).collect())
    }

    /// The combination numbered `n` (the first input varies slowest).
    fn at(&self, mut n: usize) -> At {
        let mut idx = vec![0; self.inputs.len()];
        for (slot, input) in self.inputs.iter().enumerate().rev() {
            idx[slot] = n % input.options.len();
            n /= input.options.len();
        }
        At(idx)
    }

    /// A combination by its inputs' labels and options, for messages.
    pub(super) fn describe(&self, at: &At) -> String {
        let parts: Vec<String> =
            self.inputs.iter().zip(&at.0).map(|(i, &k)| format!("{} = {}", i.label, i.options[k])).collect();
        if parts.is_empty() { "the only combination".to_string() } else { parts.join(", ") }
    }

    /// The outputs at one combination, as the page shows them: (kind, label, value) in order.
    pub fn evaluate(&self, at: &At) -> Result<Vec<Output>, WidgetError> {
        let compute = self.check_declaration()?;
        let mut out = super::Out { widget: self.name.clone(), items: Vec::new(), charts: 0, unplaceable: None };
        // A panic says where in the closure it happened, not at which inputs: it says so after
        // it, and goes on.
        let computed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| compute(at, &mut out)));
        let computed = computed.unwrap_or_else(|panic| {
            eprintln!("(while computing widget {:?} at {})", self.name, self.describe(at));
            std::panic::resume_unwind(panic)
        });
        computed.map_err(|e| WidgetError::Compute { at: self.describe(at), error: e.to_string() })?;
        if let Some(why) = out.unplaceable {
            return Err(WidgetError::Compute { at: self.describe(at), error: why });
        }
        if out.items.is_empty() {
            return Err(WidgetError::Declaration("the outputs closure produced no outputs".into()));
        }
        Ok(out.items)
    }

    /// The data file's text: every output at every combination, factored (module docs).
    pub fn data(&self) -> Result<String, WidgetError> {
        Ok(self.factored()?.to_json())
    }

    /// Every output at every combination, each as a table over the inputs it was seen to
    /// depend on, its distinct values numbered in order of first use.
    fn factored(&self) -> Result<Data, WidgetError> {
        self.check_declaration()?;
        let total = self.combinations();
        let first = self.evaluate(&self.default_at())?;
        // ids[item][combination]: the value's index among that item's distinct values.
        let mut pools: Vec<(HashMap<String, u32>, Vec<String>)> = first.iter().map(|_| Default::default()).collect();
        let mut ids: Vec<Vec<u32>> = first.iter().map(|_| Vec::with_capacity(total)).collect();
        for n in 0..total {
            let at = self.at(n);
            let items = self.evaluate(&at)?;
            if items.len() != first.len() {
                return Err(WidgetError::Shape {
                    at: self.describe(&at),
                    why: format!("{} outputs instead of {}", items.len(), first.len()),
                });
            }
            for (k, (item, model)) in items.into_iter().zip(&first).enumerate() {
                if (item.kind, &item.label, item.chart) != (model.kind, &model.label, model.chart) {
                    return Err(WidgetError::Shape {
                        at: self.describe(&at),
                        why: format!(
                            "output {k} is {:?} {:?}, not {:?} {:?}",
                            item.kind, item.label, model.kind, model.label
                        ),
                    });
                }
                let (map, list) = &mut pools[k];
                let next = list.len() as u32;
                let id = *map.entry(item.value).or_insert_with_key(|v| {
                    list.push(v.clone());
                    next
                });
                ids[k].push(id);
            }
        }
        let sizes: Vec<usize> = self.inputs.iter().map(|i| i.options.len()).collect();
        let strides: Vec<usize> = (0..sizes.len()).map(|s| sizes[s + 1..].iter().product()).collect();
        let mut outputs = Vec::with_capacity(first.len());
        for (k, model) in first.iter().enumerate() {
            let table = &ids[k];
            // Input s is a dependency if changing it alone ever changes the value.
            let deps: Vec<usize> = (0..sizes.len())
                .filter(|&s| {
                    (0..total).any(|n| !(n / strides[s]).is_multiple_of(sizes[s]) && table[n] != table[n - strides[s]])
                })
                .collect();
            // The table over the dependencies only, first dependency varying slowest.
            let sub_total: usize = deps.iter().map(|&s| sizes[s]).product();
            let mut sub = Vec::with_capacity(sub_total);
            for m in 0..sub_total {
                let (mut rest, mut n) = (m, 0);
                for &s in deps.iter().rev() {
                    n += (rest % sizes[s]) * strides[s];
                    rest /= sizes[s];
                }
                sub.push(table[n]);
            }
            // Renumber the values in order of first use, so the file does not depend on which
            // combination was evaluated first.
            let mut order: Vec<Option<usize>> = vec![None; pools[k].1.len()];
            let mut values = Vec::new();
            let mut index: Vec<usize> = Vec::with_capacity(sub.len());
            for id in sub {
                let new = *order[id as usize].get_or_insert_with(|| {
                    values.push(pools[k].1[id as usize].clone());
                    values.len() - 1
                });
                index.push(new);
            }
            outputs.push(OutputData {
                kind: model.kind,
                label: model.label.clone(),
                chart: model.chart,
                deps,
                index: (values.len() < index.len()).then_some(index),
                values,
            });
        }
        Ok(Data { name: self.name.clone(), inputs: self.inputs.clone(), scenarios: self.scenarios.clone(), outputs })
    }

    /// Compares a data file with the native values: the declared inputs must match, and at
    /// `at_least` combinations (all of them when there are fewer; always the default one,
    /// the others spread over the grid by a fixed pseudo-random sequence) every output read
    /// from the file as the page reads it must equal the output computed here. Returns how
    /// many combinations were compared.
    pub fn check_data(&self, json: &str, at_least: usize) -> Result<usize, WidgetError> {
        self.check_declaration()?;
        let data = Data::parse(json)?;
        if data.name != self.name {
            return Err(WidgetError::Mismatch(format!("the file is for widget {:?}, not {:?}", data.name, self.name)));
        }
        let declared: Vec<(Control, &str, &[String], usize)> =
            self.inputs.iter().map(|i| (i.control, i.label.as_str(), i.options.as_slice(), i.default)).collect();
        let stored: Vec<(Control, &str, &[String], usize)> =
            data.inputs.iter().map(|i| (i.control, i.label.as_str(), i.options.as_slice(), i.default)).collect();
        if declared != stored {
            return Err(WidgetError::Mismatch(format!("inputs differ: declared {declared:?}, stored {stored:?}")));
        }
        let total = self.combinations();
        let mut sample: Vec<usize> = Vec::new();
        if total <= at_least {
            sample.extend(0..total);
        } else {
            let default = self.default_at();
            let at = |n: usize| self.at(n);
            sample.push((0..total).find(|&n| at(n) == default).unwrap_or(0));
            let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
            while sample.len() < at_least {
                // splitmix64: deterministic, spread over the whole grid.
                state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
                let mut z = state;
                z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                z ^= z >> 31;
                let n = (z % total as u64) as usize;
                if !sample.contains(&n) {
                    sample.push(n);
                }
            }
        }
        for &n in &sample {
            let at = self.at(n);
            let native = self.evaluate(&at)?;
            if native.len() != data.outputs.len() {
                return Err(WidgetError::Mismatch(format!(
                    "{} outputs computed, {} stored",
                    native.len(),
                    data.outputs.len()
                )));
            }
            for (k, out) in native.iter().enumerate() {
                let stored = data.value(k, at.indices())?;
                let meta = &data.outputs[k];
                if (meta.kind, meta.label.as_str(), meta.chart) != (out.kind, out.label.as_str(), out.chart) {
                    return Err(WidgetError::Mismatch(format!(
                        "output {k} is {:?} {:?} in the file",
                        meta.kind, meta.label
                    )));
                }
                if stored != out.value {
                    return Err(WidgetError::Mismatch(format!(
                        "at {}: output {k} ({}) is {:?} in the file but {:?} computed",
                        self.describe(&at),
                        out.label,
                        clip(stored),
                        clip(&out.value)
                    )));
                }
            }
        }
        Ok(sample.len())
    }
}

fn clip(s: &str) -> String {
    if s.len() <= 80 {
        return s.to_string();
    }
    let mut end = 80;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &s[..end])
}
