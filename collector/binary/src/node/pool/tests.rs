use std::sync::{Arc, Mutex};

use super::*;
use crate::runas::Identity;

fn user(name: &str, uid: u32) -> RunAs {
    RunAs {
        id: Identity {
            name: name.into(),
            uid,
            gid: uid,
            groups: vec![uid],
        },
        home: "/nonexistent".into(),
        same_user: false,
    }
}

type Running = Arc<Mutex<BTreeSet<u32>>>;

/// A pool whose `/proc` is the set returned beside it.
fn pool(users: &[&RunAs], shared: bool) -> (UserPool, Running) {
    let running: Running = Arc::default();
    let seen = Arc::clone(&running);
    let live: LiveUids = Box::new(move || seen.lock().unwrap().clone());
    let users = users.iter().map(|u| (*u).clone()).collect();
    (UserPool::new(users, shared, live).unwrap(), running)
}

fn alice() -> RunAs {
    user("alice", 1001)
}
fn bob() -> RunAs {
    user("bob", 1002)
}

#[test]
fn each_launch_gets_a_user_of_its_own_and_the_next_waits_until_one_is_released() {
    let (users, _) = pool(&[&alice(), &bob()], false);
    assert_eq!(users.take(1, None), Some(alice()));
    assert_eq!(users.take(2, None), Some(bob()));
    assert_eq!(users.take(3, None), None);
    assert_eq!(
        users.reason(3),
        "waiting for a free run-as user: all 2 are busy"
    );
    assert_eq!(users.take(3, None), None); // asking again changes nothing
    users.release(1);
    assert_eq!(users.take(3, None), Some(alice()));
    users.release(2);
    users.release(3);
    assert_eq!(users.take(4, None), Some(alice())); // the pool's order when several are free
}

#[test]
fn waiting_launches_are_served_in_the_order_they_came() {
    let (users, _) = pool(&[&alice()], false);
    assert_eq!(users.take(1, None), Some(alice()));
    assert_eq!(users.take(2, None), None);
    assert_eq!(users.take(3, None), None);
    assert_eq!(
        users.reason(3),
        "waiting for a free run-as user: the only one is busy; 1 launch waiting before it"
    );
    users.release(1);
    assert_eq!(users.take(3, None), None); // promised to launch 2, which came first
    assert_eq!(users.take(2, None), Some(alice()));
    users.release(2);
    assert_eq!(users.take(3, None), Some(alice()));
}

#[test]
fn a_launch_that_stops_waiting_leaves_its_turn_to_the_next() {
    let (users, _) = pool(&[&alice()], false);
    users.take(1, None);
    assert_eq!(users.take(2, None), None);
    assert_eq!(users.take(3, None), None);
    users.leave(2);
    users.release(1);
    assert_eq!(users.take(3, None), Some(alice()));
}

#[test]
fn a_launch_naming_a_working_directory_waits_for_its_owner_alone() {
    let (users, _) = pool(&[&alice(), &bob()], false);
    assert_eq!(users.take(1, None), Some(alice()));
    assert_eq!(users.take(2, Some(alice())), None); // bob is free, but not the owner
    assert_eq!(
        users.reason(2),
        "waiting for run-as user alice, the owner of its working directory: held by another \
         launch"
    );
    assert_eq!(users.take(3, None), Some(bob()));
    users.release(1);
    assert_eq!(users.take(2, None), Some(alice()));
}

#[test]
fn a_user_still_running_processes_of_no_launch_is_given_to_none() {
    let (users, live) = pool(&[&alice(), &bob()], false);
    live.lock().unwrap().insert(1001); // left by an earlier life of the agent
    assert_eq!(users.take(1, None), Some(bob()));
    assert_eq!(users.take(2, None), None);
    assert_eq!(
        users.reason(2),
        "waiting for a free run-as user: all 2 are busy (alice still running processes of no \
         launch)"
    );
    assert_eq!(users.take(3, Some(alice())), None);
    assert!(users.reason(3).ends_with(
        "alice, the owner of its working directory: still running processes of no launch"
    ));
    live.lock().unwrap().clear();
    assert_eq!(users.take(2, None), Some(alice()));
}

#[test]
fn the_agents_own_user_runs_the_agent_and_is_still_free() {
    let mut me = user("agent", 0);
    me.same_user = true;
    let (users, live) = pool(&[&me], false);
    live.lock().unwrap().insert(0);
    assert_eq!(users.take(1, None), Some(me.clone()));
    assert!(!users.exclusive(&me)); // nothing of it is killed at the end
    assert_eq!(users.take(2, None), None); // but launches still take turns on it
}

#[test]
fn shared_users_never_make_a_launch_wait_and_spread_by_load() {
    let (users, live) = pool(&[&alice(), &bob()], true);
    live.lock().unwrap().extend([1001, 1002]);
    let taken: Vec<_> = (1..6)
        .map(|i| users.take(i, None).unwrap().id.uid)
        .collect();
    assert_eq!(taken, [1001, 1002, 1001, 1002, 1001]);
    assert_eq!(users.take(6, Some(bob())), Some(bob()));
    assert!(!users.exclusive(&alice()));
    for launch in [2, 4, 6] {
        users.release(launch);
    }
    assert_eq!(users.take(7, None), Some(bob()));
}

#[test]
fn wait_returns_the_user_released_by_another_thread_and_gives_up_when_stopping() {
    let (users, _) = pool(&[&alice()], false);
    let users = Arc::new(users);
    users.take(1, None);
    assert_eq!(users.take(2, None), None);
    let waiting = Arc::clone(&users);
    let waiter = std::thread::spawn(move || waiting.wait(2, &Flag::default()));
    users.release(1);
    assert_eq!(waiter.join().unwrap(), Some(alice()));
    let stopping = Flag::default();
    stopping.set();
    assert_eq!(users.wait(3, &stopping), None);
}

#[test]
fn a_pool_needs_a_user() {
    let live: LiveUids = Box::new(BTreeSet::new);
    let refused = UserPool::new(Vec::new(), false, live).err().unwrap();
    assert!(refused.contains("needs one user at least"));
}
