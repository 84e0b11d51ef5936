//! The ids of a task batch's runs and threads: derived from the batch and
//! the task, so a batch submitted again names what it named before, and
//! intakes working side by side agree.

/// The id of `task_id`'s run in batch `batch_id`: the same for the same
/// two, so a batch submitted again names the runs it named before.
pub fn batch_run_id(batch_id: &str, task_id: &str) -> String {
    batch_scoped("run", batch_id, task_id)
}

/// The thread of `task_id`'s run in batch `batch_id` with salt `salt`
/// (the batch's header keeps it; empty for a batch from before salts):
/// the run's creation is idempotent on both ids, two intakes creating it
/// at once agree on its thread, and without the salt nobody can tell it.
pub fn batch_thread_id(batch_id: &str, task_id: &str, salt: &str) -> String {
    if salt.is_empty() {
        return batch_scoped("thread", batch_id, task_id);
    }
    batch_scoped("thread", &format!("{batch_id}/{salt}"), task_id)
}

/// A name-based UUID of `what` for a task in a batch; the lengths keep
/// any two distinct (batch, task) pairs apart.
fn batch_scoped(what: &str, batch_id: &str, task_id: &str) -> String {
    let name = format!(
        "deepfleet/{what}/{}:{batch_id}/{}:{task_id}",
        batch_id.len(),
        task_id.len()
    );
    uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_OID, name.as_bytes()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_run_ids_are_stable_and_distinct() {
        assert_eq!(batch_run_id("b1", "t1"), batch_run_id("b1", "t1"));
        let ids = [
            batch_run_id("b1", "t1"),
            batch_run_id("b1", "t2"),
            batch_run_id("b2", "t1"),
            batch_run_id("b1t", "1"),
            batch_thread_id("b1", "t1", ""),
            batch_thread_id("b1", "t1", "salt"),
        ];
        let distinct: std::collections::BTreeSet<_> = ids.iter().collect();
        assert_eq!(distinct.len(), ids.len(), "{ids:?}");
    }
}
