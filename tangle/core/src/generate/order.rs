//! Chapter order: every chapter after the chapters its library imports (its save cells; a run
//! or test cell may import a later chapter). A cycle is an error that lists the `use`s closing
//! it, each at its chapter line.

use std::collections::BTreeMap;

use super::crates::ChapterCrate;
use crate::diagnostic::{Diagnostic, Diagnostics};

#[derive(Clone, Copy, PartialEq)]
enum Mark {
    New,
    Active,
    Done,
}

struct Walk<'a> {
    crates: &'a [ChapterCrate],
    index: BTreeMap<&'a str, usize>,
    marks: Vec<Mark>,
    stack: Vec<usize>,
    order: Vec<usize>,
}

impl Walk<'_> {
    fn visit(&mut self, i: usize) -> Result<(), Box<Diagnostic>> {
        match self.marks[i] {
            Mark::Done => return Ok(()),
            Mark::Active => return Err(Box::new(self.cycle(i))),
            Mark::New => {}
        }
        self.marks[i] = Mark::Active;
        self.stack.push(i);
        let deps: Vec<usize> = self.crates[i].lib_chapters.iter().map(|d| self.index[d.as_str()]).collect();
        for dep in deps {
            self.visit(dep)?;
        }
        self.stack.pop();
        self.marks[i] = Mark::Done;
        self.order.push(i);
        Ok(())
    }

    fn cycle(&self, back_to: usize) -> Diagnostic {
        let start = self.stack.iter().position(|&s| s == back_to).unwrap_or(0);
        let cycle = &self.stack[start..];
        let step = |k: usize| {
            let from = &self.crates[cycle[k]];
            let to = self.crates[cycle[(k + 1) % cycle.len()]].name();
            (from.chapter_deps[to].clone(), to.to_string())
        };
        let (first, _) = step(0);
        let mut d = Diagnostic::error(
            first,
            format!(
                "chapters import each other in a cycle: {}",
                (0..cycle.len())
                    .map(|k| format!("{} uses {}", self.crates[cycle[k]].name(), step(k).1))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        );
        for k in 1..cycle.len() {
            let (loc, to) = step(k);
            d = d.with_note(format!("{loc} uses {to}"));
        }
        d.with_help("move the shared code into the earlier chapter, or into a chapter both import")
    }
}

/// Orders `crates` dependencies first.
pub(crate) fn topological(crates: Vec<ChapterCrate>) -> Result<Vec<ChapterCrate>, Diagnostics> {
    let mut walk = Walk {
        crates: &crates,
        index: crates.iter().enumerate().map(|(i, c)| (c.name(), i)).collect(),
        marks: vec![Mark::New; crates.len()],
        stack: Vec::new(),
        order: Vec::new(),
    };
    for i in 0..crates.len() {
        walk.visit(i).map_err(|d| Diagnostics::from(*d))?;
    }
    let order = walk.order;
    let mut slots: Vec<Option<ChapterCrate>> = crates.into_iter().map(Some).collect();
    Ok(order.into_iter().map(|i| slots[i].take().expect("each crate once")).collect())
}
