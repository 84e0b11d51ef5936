//! One batch's admission as plain data: the embedded store's form, and
//! the reference the Lua scripts under `store/lua/admission_*.lua` follow.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use serde::{Deserialize, Serialize};

use super::{AdmissionState, Entered};

/// A batch's window, line, and answers (see the module doc of
/// [`crate::admission`]).
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct Window {
    pub(crate) size: u32,
    pub(crate) waiting: VecDeque<String>,
    pub(crate) members: BTreeSet<String>,
    pub(crate) admitted: BTreeSet<String>,
    pub(crate) unstarted: BTreeSet<String>,
    /// Ended run -> the run admitted in its place (`""`: none).
    pub(crate) after: BTreeMap<String, String>,
}

impl Window {
    pub(crate) fn enter(&mut self, run: &str, size: u32) -> Entered {
        self.size = size;
        if self.members.contains(run) {
            return Entered::Hold;
        }
        self.members.insert(run.to_owned());
        if self.waiting.is_empty() && self.has_room() {
            self.admit(run.to_owned());
            Entered::Start
        } else {
            self.waiting.push_back(run.to_owned());
            Entered::Hold
        }
    }

    pub(crate) fn admit_after(&mut self, ended: &str) -> Option<String> {
        if let Some(next) = self.after.get(ended) {
            return Some(next.clone()).filter(|n| !n.is_empty());
        }
        if !self.admitted.remove(ended) {
            return None;
        }
        self.unstarted.remove(ended);
        let next = if self.has_room() {
            self.waiting.pop_front()
        } else {
            None
        };
        if let Some(next) = &next {
            self.admit(next.clone());
        }
        self.after
            .insert(ended.to_owned(), next.clone().unwrap_or_default());
        next
    }

    pub(crate) fn top_up(&mut self) -> Vec<String> {
        let mut out = Vec::new();
        while self.has_room() {
            let Some(next) = self.waiting.pop_front() else {
                break;
            };
            self.admit(next.clone());
            out.push(next);
        }
        out
    }

    pub(crate) fn started(&mut self, runs: &[String]) {
        for run in runs {
            self.unstarted.remove(run);
        }
    }

    pub(crate) fn state(&self) -> AdmissionState {
        AdmissionState {
            window: self.size,
            waiting: self.waiting.len() as u64,
            admitted: self.admitted.iter().cloned().collect(),
            unstarted: self.unstarted.iter().cloned().collect(),
        }
    }

    pub(crate) fn is_idle(&self) -> bool {
        self.waiting.is_empty() && self.admitted.is_empty()
    }

    /// Whether `run` waits for a place.
    pub(crate) fn is_waiting(&self, run: &str) -> bool {
        self.members.contains(run) && !self.admitted.contains(run) && !self.after.contains_key(run)
    }

    fn has_room(&self) -> bool {
        self.admitted.len() < self.size as usize
    }

    fn admit(&mut self, run: String) {
        self.unstarted.insert(run.clone());
        self.admitted.insert(run);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn a_shrunk_window_admits_nothing_until_it_has_room_again() {
        let mut w = Window::default();
        for run in ["a", "b", "c", "d"] {
            w.enter(run, 3);
        }
        assert_eq!(w.admitted.len(), 3);
        w.enter("d", 1);
        assert_eq!(w.admit_after("a"), None, "two still admitted, window 1");
        assert_eq!(w.admit_after("b"), None);
        assert_eq!(w.admit_after("c"), Some("d".to_owned()));
        assert!(!w.is_waiting("d"));
        assert!(!w.is_waiting("x"));
    }

    #[test]
    fn an_answer_is_kept_after_the_admitted_run_ends_too() {
        let mut w = Window::default();
        for run in ["a", "b"] {
            w.enter(run, 1);
        }
        assert!(w.is_waiting("b"));
        assert_eq!(w.admit_after("a"), Some("b".to_owned()));
        assert_eq!(w.admit_after("b"), None);
        assert_eq!(w.admit_after("a"), Some("b".to_owned()));
        assert!(w.is_idle());
    }
}
