//! Which line of what tangle wrote each line of an edited file stands for, and which cell each
//! changed line belongs to. The two texts are compared line by line ([`similar`]'s Myers diff)
//! as the seal sees them (no seal, location comments without their numbers): the lines with
//! text first, then the blank lines and unpaired lines between two pairs. Then every run
//! of changed lines is given to the one cell whose lines it replaces, or, for lines only
//! added, to the cell it touches: inside it, at its end or at its start. A run that replaces a
//! line tangle wrote itself (the header, glue, a location comment, the blank line between two
//! cells), that spans two cells, or that adds lines touching no cell (between two cells) is a
//! [`Problem`]. Runs of lines only added or only removed that could equally stand a few lines
//! up or down (a blank line added next to another) are slid until they touch a cell, or meet
//! the run next to them and are placed with it, as a reader would place them.

use similar::{Algorithm, DiffOp, capture_diff_slices};

use crate::generate::{Segment, seal};

/// What a line of the generated file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    /// A line of the cell of segment `.0` (index into the file's segments).
    Cell(usize),
    /// A hoisted inner attribute line (index into the file's hoisted lines).
    Hoisted(usize),
    /// A line tangle wrote itself.
    Tangle,
}

/// Why a run of changed lines cannot go back into a chapter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// It changes or removes line `old` (zero-based) of what tangle wrote, which is tangle's.
    Replaces { new: usize, old: usize },
    /// It adds lines, from zero-based line `new` of the edited file, next to no cell.
    AddedOutside { new: usize },
    /// It changes lines of two cells (segments `.1` and `.2`) at once.
    TwoCells { new: usize, first: usize, second: usize },
    /// It adds or removes inner attribute lines at the top of the file.
    Hoisted { new: usize },
}

/// The edited file's lines, each with the generated line it equals (if any) and its owner.
#[derive(Debug)]
pub struct Alignment {
    /// For each line of the edited file: the zero-based line of the generated file it equals.
    pub old_of: Vec<Option<usize>>,
    pub owner: Vec<Owner>,
}

/// The owner of every line of the generated file.
pub(crate) fn owners(old_len: usize, segments: &[Segment], hoisted: &[(usize, usize)]) -> Vec<Owner> {
    let mut out = vec![Owner::Tangle; old_len];
    for (s, seg) in segments.iter().enumerate() {
        for line in seg.generated..seg.generated + seg.len {
            if let Some(slot) = out.get_mut(line - 1) {
                *slot = Owner::Cell(s);
            }
        }
    }
    for (h, (line, _)) in hoisted.iter().enumerate() {
        if let Some(slot) = out.get_mut(line - 1) {
            *slot = Owner::Hoisted(h);
        }
    }
    out
}

/// A file's lines as the comparison sees them.
pub fn keys(text: &str) -> Vec<String> {
    text.lines().enumerate().map(|(i, l)| seal::normal_line(i, l).into_owned()).collect()
}

/// One step of the line-by-line comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Old line `.0` equals new line `.1`.
    Same(usize, usize),
    /// Old line `.0` was removed.
    Removed(usize),
    /// New line `.0` was added.
    Added(usize),
}

/// Aligns `new` (the edited file) with `old` (what tangle wrote), whose lines are owned as
/// `owners` says. Every problem found is returned, in file order.
pub(crate) fn align(old: &[String], new: &[String], owners: &[Owner]) -> Result<Alignment, Vec<Problem>> {
    let mut steps = compare(old, new);
    let texts = Texts { old, new };
    let mut assigned: Vec<Option<Owner>> = vec![None; new.len()];
    let mut problems = Vec::new();
    let mut i = 0;
    while i < steps.len() {
        if matches!(steps[i], Step::Same(..)) {
            i += 1;
            continue;
        }
        let mut j = i;
        while j < steps.len() && !matches!(steps[j], Step::Same(..)) {
            j += 1;
        }
        match hunk(&texts, owners, &mut steps, i..j) {
            Ok((block, owner)) => {
                for step in &steps[block.clone()] {
                    if let (Step::Added(n), Some(owner)) = (step, owner(step)) {
                        assigned[*n] = Some(owner);
                    }
                }
                i = block.end;
            }
            Err(p) => {
                problems.push(p);
                i = j;
            }
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    let mut old_of = vec![None; new.len()];
    let mut owner = vec![Owner::Tangle; new.len()];
    for step in &steps {
        match *step {
            Step::Same(o, n) => {
                old_of[n] = Some(o);
                owner[n] = owners[o];
            }
            Step::Added(n) => owner[n] = assigned[n].unwrap_or(Owner::Tangle),
            Step::Removed(_) => {}
        }
    }
    Ok(Alignment { old_of, owner })
}

/// The steps that turn `old` into `new`, in two passes: the lines with text are paired
/// first, then the lines between two pairs (blank lines and lines without a partner) are
/// compared on their own. A blank line says nothing about where it belongs, so a single pass
/// may pair the blank line tangle put between two cells with a blank line inside the next
/// cell, and then read that cell's location comment as removed and written again.
fn compare(old: &[String], new: &[String]) -> Vec<Step> {
    let text = |lines: &[String]| -> Vec<usize> { (0..lines.len()).filter(|&i| !lines[i].trim().is_empty()).collect() };
    let (old_text, new_text) = (text(old), text(new));
    let old_keys: Vec<&String> = old_text.iter().map(|&i| &old[i]).collect();
    let new_keys: Vec<&String> = new_text.iter().map(|&i| &new[i]).collect();
    let mut pairs = Vec::new();
    for op in capture_diff_slices(Algorithm::Myers, &old_keys, &new_keys) {
        if let DiffOp::Equal { old_index, new_index, len } = op {
            pairs.extend((0..len).map(|k| (old_text[old_index + k], new_text[new_index + k])));
        }
    }
    let mut steps = Vec::with_capacity(old.len().max(new.len()));
    let (mut o, mut n) = (0, 0);
    for (po, pn) in pairs.into_iter().chain([(old.len(), new.len())]) {
        between(&old[o..po], &new[n..pn], (o, n), &mut steps);
        if po < old.len() {
            steps.push(Step::Same(po, pn));
        }
        (o, n) = (po + 1, pn + 1);
    }
    steps
}

/// The steps that turn the lines `old` into `new`, which start at lines `at` of the files.
fn between(old: &[String], new: &[String], at: (usize, usize), steps: &mut Vec<Step>) {
    let (o0, n0) = at;
    for op in capture_diff_slices(Algorithm::Myers, old, new) {
        match op {
            DiffOp::Equal { old_index, new_index, len } => {
                steps.extend((0..len).map(|k| Step::Same(o0 + old_index + k, n0 + new_index + k)))
            }
            DiffOp::Delete { old_index, old_len, .. } => {
                steps.extend((o0 + old_index..o0 + old_index + old_len).map(Step::Removed))
            }
            DiffOp::Insert { new_index, new_len, .. } => {
                steps.extend((n0 + new_index..n0 + new_index + new_len).map(Step::Added))
            }
            DiffOp::Replace { old_index, old_len, new_index, new_len } => {
                steps.extend((o0 + old_index..o0 + old_index + old_len).map(Step::Removed));
                steps.extend((n0 + new_index..n0 + new_index + new_len).map(Step::Added));
            }
        }
    }
}

/// The two files' lines, as compared.
struct Texts<'a> {
    old: &'a [String],
    new: &'a [String],
}

/// What owns each added line of an accepted run.
type Assign = Box<dyn Fn(&Step) -> Option<Owner>>;

/// One run of changed steps, `block` of `steps`: accepted where it is, slid to a place where
/// it touches a cell, or slid onto the run just before or after it and taken with it (a blank
/// line that Myers paired with the wrong blank line splits one edit in two); returned with
/// where it ended up and who owns its added lines. Or the problem of the run where it was.
fn hunk(
    texts: &Texts,
    owners: &[Owner],
    steps: &mut [Step],
    block: std::ops::Range<usize>,
) -> Result<(std::ops::Range<usize>, Assign), Problem> {
    if let Some(assign) = evaluate(owners, steps, &block) {
        return Ok((block, assign));
    }
    let pure = steps[block.clone()].iter().all(|s| matches!(s, Step::Added(_)))
        || steps[block.clone()].iter().all(|s| matches!(s, Step::Removed(_)));
    if pure {
        for (place, slid) in slides(texts, steps, block.clone()) {
            // Where the slid run meets another run, the two are one edit.
            let mut merged = place.clone();
            while merged.start > 0 && !matches!(slid[merged.start - 1], Step::Same(..)) {
                merged.start -= 1;
            }
            while merged.end < slid.len() && !matches!(slid[merged.end], Step::Same(..)) {
                merged.end += 1;
            }
            if let Some(assign) = evaluate(owners, &slid, &merged) {
                steps.copy_from_slice(&slid);
                return Ok((merged, assign));
            }
        }
    }
    Err(problem_of(owners, steps, &block))
}

/// Who owns the added lines of a run of changed steps where it stands, if it can be placed:
/// lines only added go to the cell just before or after them; lines changed or removed must
/// all be one cell's (or hoisted attributes, changed line for line).
fn evaluate(owners: &[Owner], steps: &[Step], block: &std::ops::Range<usize>) -> Option<Assign> {
    let cell_of = |o: usize| match owners.get(o) {
        Some(Owner::Cell(s)) => Some(*s),
        _ => None,
    };
    let removed: Vec<usize> = steps[block.clone()]
        .iter()
        .filter_map(|s| match s {
            Step::Removed(o) => Some(*o),
            _ => None,
        })
        .collect();
    let added: Vec<usize> = steps[block.clone()]
        .iter()
        .filter_map(|s| match s {
            Step::Added(n) => Some(*n),
            _ => None,
        })
        .collect();
    if removed.is_empty() {
        let before = block.start.checked_sub(1).and_then(|k| old_line(steps.get(k))).and_then(cell_of);
        let after = old_line(steps.get(block.end)).and_then(cell_of);
        let s = before.or(after)?;
        return Some(Box::new(move |_| Some(Owner::Cell(s))));
    }
    let kinds: Vec<Owner> = removed.iter().map(|&o| owners[o]).collect();
    if let Owner::Cell(s) = kinds[0]
        && kinds.iter().all(|k| *k == Owner::Cell(s))
    {
        return Some(Box::new(move |_| Some(Owner::Cell(s))));
    }
    if kinds.iter().all(|k| matches!(k, Owner::Hoisted(_))) && removed.len() == added.len() {
        let pairs: Vec<(usize, Owner)> = added.iter().copied().zip(kinds).collect();
        return Some(Box::new(move |step| match step {
            Step::Added(n) => pairs.iter().find(|(m, _)| m == n).map(|(_, k)| *k),
            _ => None,
        }));
    }
    None
}

/// Why a run of changed steps cannot be placed.
fn problem_of(owners: &[Owner], steps: &[Step], block: &std::ops::Range<usize>) -> Problem {
    let new_at = first_new_line(steps, block.start);
    let removed: Vec<usize> = steps[block.clone()]
        .iter()
        .filter_map(|s| match s {
            Step::Removed(o) => Some(*o),
            _ => None,
        })
        .collect();
    if removed.is_empty() {
        return Problem::AddedOutside { new: new_at };
    }
    if removed.iter().all(|&o| matches!(owners[o], Owner::Hoisted(_))) {
        return Problem::Hoisted { new: new_at };
    }
    replaced_problem(owners, steps, block, &removed, new_at)
}

/// The first new line at or after step `k` (where a problem is shown).
fn first_new_line(steps: &[Step], k: usize) -> usize {
    steps[k..]
        .iter()
        .find_map(|s| match s {
            Step::Same(_, n) | Step::Added(n) => Some(*n),
            Step::Removed(_) => None,
        })
        .unwrap_or_else(|| {
            steps[..k]
                .iter()
                .rev()
                .find_map(|s| match s {
                    Step::Same(_, n) | Step::Added(n) => Some(n + 1),
                    Step::Removed(_) => None,
                })
                .unwrap_or(0)
        })
}

/// The old line of a step, if it is a matched pair.
fn old_line(step: Option<&Step>) -> Option<usize> {
    match step {
        Some(Step::Same(o, _)) => Some(*o),
        _ => None,
    }
}

/// How far a run of added or removed lines may slide to touch a cell.
const SLIDE: usize = 16;

/// The places a run of only-added or only-removed steps may stand, each with the steps as
/// they would be: where it is, then one step up, one down, two up, … as long as the lines it
/// slides over still pair with equal lines (a blank line added next to another may stand on
/// either side of it).
fn slides(texts: &Texts, steps: &[Step], block: std::ops::Range<usize>) -> Vec<(std::ops::Range<usize>, Vec<Step>)> {
    let mut out = vec![(block.clone(), steps.to_vec())];
    for up in [true, false] {
        for t in 1..=SLIDE {
            let place = match up {
                true if t <= block.start => block.start - t..block.end - t,
                false if block.end + t <= steps.len() => block.start + t..block.end + t,
                _ => break,
            };
            let window = place.start.min(block.start)..place.end.max(block.end);
            let others = steps[window.clone()]
                .iter()
                .enumerate()
                .any(|(k, s)| !block.contains(&(window.start + k)) && !matches!(s, Step::Same(..)));
            if others {
                break;
            }
            let mut slid = steps.to_vec();
            move_block(&mut slid, block.clone(), place.clone());
            let pairs_hold = slid[window].iter().all(|s| match s {
                Step::Same(o, n) => texts.old[*o] == texts.new[*n],
                _ => true,
            });
            if !pairs_hold {
                break;
            }
            out.push((place, slid));
        }
    }
    // Nearest first, up before down.
    out.sort_by_key(|(p, _)| (p.start.abs_diff(block.start), p.start > block.start));
    out
}

/// Moves the block of steps to `place`: the matched steps it slides over go to its other
/// side, their old and new lines paired anew in order.
fn move_block(steps: &mut [Step], block: std::ops::Range<usize>, place: std::ops::Range<usize>) {
    let lo = place.start.min(block.start);
    let hi = place.end.max(block.end);
    let mut olds = Vec::new();
    let mut news = Vec::new();
    for step in &steps[lo..hi] {
        match *step {
            Step::Same(o, n) => {
                olds.push(o);
                news.push(n);
            }
            Step::Removed(o) => olds.push(o),
            Step::Added(n) => news.push(n),
        }
    }
    let adds = matches!(steps[block.start], Step::Added(_));
    let (mut o, mut n) = (olds.into_iter(), news.into_iter());
    for (k, step) in steps.iter_mut().enumerate().take(hi).skip(lo) {
        *step = match (place.contains(&k), adds) {
            (true, true) => Step::Added(n.next().expect("carried")),
            (true, false) => Step::Removed(o.next().expect("carried")),
            (false, _) => Step::Same(o.next().expect("paired"), n.next().expect("paired")),
        };
    }
}

/// Where a problem with changed old lines `olds` (the steps of `block`) lies: across two
/// cells (it changes lines of both, or only the lines tangle wrote between them), or at the
/// first line tangle wrote.
fn replaced_problem(
    owners: &[Owner],
    steps: &[Step],
    block: &std::ops::Range<usize>,
    olds: &[usize],
    new: usize,
) -> Problem {
    let cell = |o: Option<usize>| match o.and_then(|o| owners.get(o)) {
        Some(Owner::Cell(s)) => Some(*s),
        _ => None,
    };
    let mut cells: Vec<usize> = olds.iter().filter_map(|&o| cell(Some(o))).collect();
    cells.dedup();
    if cells.len() >= 2 {
        return Problem::TwoCells { new, first: cells[0], second: cells[1] };
    }
    let before = cell(block.start.checked_sub(1).and_then(|k| old_line(steps.get(k))));
    let after = cell(old_line(steps.get(block.end)));
    let first = cells.first().copied().or(before);
    let last = cells.first().copied().or(after);
    if let (Some(first), Some(last)) = (first, last)
        && first != last
    {
        return Problem::TwoCells { new, first, second: last };
    }
    for &o in olds {
        match owners[o] {
            Owner::Tangle => return Problem::Replaces { new, old: o },
            Owner::Hoisted(_) => return Problem::Hoisted { new },
            Owner::Cell(_) => {}
        }
    }
    Problem::Replaces { new, old: olds[0] }
}
