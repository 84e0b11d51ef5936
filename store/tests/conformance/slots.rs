//! [`deepfleet_store::Slots`] scenarios.

use std::sync::Arc;

use deepfleet_proto::{ConcurrencyLimit, SlotPool, TenantId};
use deepfleet_store::Slots;
use pretty_assertions::assert_eq;

fn tenant(id: &str) -> TenantId {
    TenantId::new(id.to_owned()).unwrap()
}

pub async fn a_full_pool_takes_nothing_and_a_holder_takes_again_for_free(store: Arc<dyn Slots>) {
    let acme = ConcurrencyLimit::tenant(tenant("acme"), 2);
    let research = ConcurrencyLimit::agent(tenant("acme"), "research", 1);
    let both = [acme.clone(), research.clone()];
    assert_eq!(store.take_slots("r1", &both).await.unwrap(), None);
    // A redelivered step takes again what its run holds: nothing moves.
    assert_eq!(store.take_slots("r1", &both).await.unwrap(), None);
    // The assistant's pool is full: nothing taken, the tenant's pool
    // still has one place.
    assert_eq!(
        store.take_slots("r2", &both).await.unwrap(),
        Some(research.pool.clone())
    );
    assert_eq!(store.slot_holders(&acme.pool).await.unwrap(), ["r1"]);
    let other = ConcurrencyLimit::agent(tenant("acme"), "writer", 5);
    let r3 = [acme.clone(), other.clone()];
    assert_eq!(store.take_slots("r3", &r3).await.unwrap(), None);
    assert_eq!(
        store
            .take_slots("r4", std::slice::from_ref(&acme))
            .await
            .unwrap(),
        Some(acme.pool.clone())
    );
    // Another tenant's pools are apart.
    let beta = ConcurrencyLimit::tenant(tenant("beta"), 1);
    assert_eq!(
        store
            .take_slots("r4", std::slice::from_ref(&beta))
            .await
            .unwrap(),
        None
    );
    let mut pools = store.slot_pools().await.unwrap();
    pools.sort();
    let mut expected = vec![
        acme.pool.clone(),
        research.pool.clone(),
        other.pool.clone(),
        beta.pool.clone(),
    ];
    expected.sort();
    assert_eq!(pools, expected);

    // Giving back frees the place, twice as once.
    let r1_pools = [acme.pool.clone(), research.pool.clone()];
    store.release_slots("r1", &r1_pools).await.unwrap();
    store.release_slots("r1", &r1_pools).await.unwrap();
    assert_eq!(store.take_slots("r2", &both).await.unwrap(), None);
    let mut holders = store.slot_holders(&acme.pool).await.unwrap();
    holders.sort();
    assert_eq!(holders, ["r2", "r3"]);

    // An emptied pool leaves the sweep's list once dropped; one with
    // holders stays.
    store
        .release_slots("r4", std::slice::from_ref(&beta.pool))
        .await
        .unwrap();
    store.drop_slot_pool(&beta.pool).await.unwrap();
    store.drop_slot_pool(&acme.pool).await.unwrap();
    let pools = store.slot_pools().await.unwrap();
    assert!(!pools.contains(&beta.pool), "{pools:?}");
    assert!(pools.contains(&acme.pool), "{pools:?}");
    assert_eq!(
        store
            .slot_holders(&SlotPool::parse("nobody").unwrap())
            .await
            .unwrap(),
        Vec::<String>::new()
    );
}

pub async fn concurrent_takes_never_pass_the_limit(store: Arc<dyn Slots>) {
    let limit = ConcurrencyLimit::tenant(tenant("crowd"), 7);
    let takes = (0..40).map(|run| {
        let store = Arc::clone(&store);
        let limit = limit.clone();
        tokio::spawn(async move {
            store
                .take_slots(&format!("r{run}"), &[limit])
                .await
                .unwrap()
                .is_none()
        })
    });
    let mut taken = 0;
    for take in takes.collect::<Vec<_>>() {
        taken += usize::from(take.await.unwrap());
    }
    assert_eq!(taken, 7);
    assert_eq!(store.slot_holders(&limit.pool).await.unwrap().len(), 7);
}

conformance!(
    a_full_pool_takes_nothing_and_a_holder_takes_again_for_free,
    concurrent_takes_never_pass_the_limit
);
