use std::collections::BTreeSet;
use std::os::unix::fs::{MetadataExt, PermissionsExt};

use serde_json::{json, Value};

use super::*;
use crate::node::testing::{artifact, host, integration, launch, same_user, stranger, Place};

fn mode(path: &Path) -> u32 {
    fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

/// Every path below `root`.
fn everything(root: &Path) -> BTreeSet<PathBuf> {
    let mut found = BTreeSet::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(directory) = stack.pop() {
        for entry in fs::read_dir(&directory).unwrap().flatten() {
            if entry.file_type().unwrap().is_dir() {
                stack.push(entry.path());
            }
            found.insert(entry.path());
        }
    }
    found
}

fn refusal(result: Result<Prepared, Refused>) -> String {
    match result {
        Ok(_) => panic!("prepared, not refused"),
        Err(Refused(why)) => why,
    }
}

fn with_sources(change: impl FnOnce(&mut Vec<Value>)) -> Value {
    let mut document = integration();
    change(document["sources"].as_array_mut().unwrap());
    document
}

#[test]
fn a_verified_launch_gets_private_configuration_and_its_collector_command() {
    let place = Place::new("prepare");
    let (artifact, host) = (
        artifact(&place.0, "exit 0"),
        host(&place.0, vec![same_user()]),
    );
    let spool_root = place.0.join("spool");
    let launch_dir = host.state_dir.join("launches/7");
    let launched = launch(&artifact, &spool_root, &integration(), "rank-0");
    let prepared = prepare(&launched, &launch_dir, &host, &same_user()).unwrap();
    assert_eq!(prepared.spool, spool_root.join("run-a/2/rank-0"));
    for private in [&prepared.spool, &spool_root, &prepared.directory] {
        assert_eq!(mode(private), 0o700, "{}", private.display());
    }
    assert_eq!(prepared.workdir, host.work_root.join("7"));
    assert!(prepared.workdir.is_dir() && !prepared.workdir.starts_with(&prepared.directory));
    for (name, content) in [
        ("token", "workload-token".to_owned()),
        ("trust-bundle.pem", "CA PEM\n".to_owned()),
        ("integration.json", integration().to_string()),
    ] {
        assert_eq!(fs::read_to_string(launch_dir.join(name)).unwrap(), content);
        assert_eq!(mode(&launch_dir.join(name)), 0o600);
    }
    let args = &prepared.collector;
    let after = |flag: &str| args[args.iter().position(|a| a == flag).unwrap() + 1].clone();
    assert_eq!(
        args[..2],
        [
            artifact.join("tuneplane-collector").display().to_string(),
            "run".into()
        ]
    );
    assert_eq!(
        after("--token-file"),
        launch_dir.join("token").display().to_string()
    );
    assert_eq!(after("--server-name"), "gw.example");
    assert_eq!(after("--attempt"), "2");
    assert_eq!(after("--workdir"), prepared.workdir.display().to_string());
    let never: Vec<&String> = args
        .windows(2)
        .filter(|w| w[0] == "--never-read")
        .map(|w| &w[1])
        .collect();
    assert_eq!(
        never,
        [
            &host.state_dir.display().to_string(),
            &spool_root.display().to_string()
        ]
    );
    assert!(!args.contains(&"--read-as".to_owned())); // the agent's own user reads as itself
    let recorded: Value =
        serde_json::from_slice(&fs::read(launch_dir.join("launch.json")).unwrap()).unwrap();
    assert_eq!(recorded["collector"], json!(args));
}

#[test]
fn an_artifact_other_than_the_one_launched_or_tampered_is_refused_before_anything_is_made() {
    let place = Place::new("tampered");
    let host = host(&place.0, vec![same_user()]);
    let launch_dir = host.state_dir.join("launches/7");
    let original = artifact(&place.0, "exit 0");
    let mut other = launch(&original, &place.0.join("spool"), &integration(), "rank-0");
    other.collector.as_mut().unwrap().artifact_digest = "f".repeat(64);
    let why = refusal(prepare(&other, &launch_dir, &host, &same_user()));
    assert!(why.contains("is not the one launched"), "{why}");
    for (change, words) in [
        ("edit", "does not match its sha256 (tampered)"),
        ("add", "is not in the manifest (added)"),
        ("remove", "is missing"),
    ] {
        let copy = artifact(&place.0.join(change), "exit 0");
        let binary = copy.join("tuneplane-collector");
        match change {
            "edit" => fs::write(&binary, "#!/bin/sh\nexit 1\n").unwrap(),
            "add" => fs::write(copy.join("libc.so.6"), "not the host's\n").unwrap(),
            _ => fs::remove_file(&binary).unwrap(),
        }
        let launched = launch(&copy, &place.0.join("spool"), &integration(), "rank-0");
        let why = refusal(prepare(&launched, &launch_dir, &host, &same_user()));
        assert!(why.contains(words), "{change}: {why}");
        assert!(!place.0.join("spool").exists() && !launch_dir.exists());
        assert!(!host.work_root.join("7").exists());
    }
}

#[test]
fn a_spool_root_that_is_not_private_is_refused_with_no_fallback() {
    let place = Place::new("spool");
    let (artifact, host) = (
        artifact(&place.0, "exit 0"),
        host(&place.0, vec![same_user()]),
    );
    let shared = place.0.join("shared-spool");
    fs::create_dir(&shared).unwrap();
    fs::set_permissions(&shared, fs::Permissions::from_mode(0o755)).unwrap();
    let launch_dir = host.state_dir.join("launches/7");
    let why = refusal(prepare(
        &launch(&artifact, &shared, &integration(), "rank-0"),
        &launch_dir,
        &host,
        &same_user(),
    ));
    assert!(why.starts_with("spool grant refused: spool root"), "{why}");
    assert!(why.contains("mode 0755; it must be 0700"), "{why}");
    assert!(!launch_dir.exists());
    assert_eq!(fs::read_dir(&shared).unwrap().count(), 0);
}

#[test]
fn a_source_path_into_the_agents_state_or_the_spool_is_refused_and_nothing_is_made() {
    let place = Place::new("fenced");
    let (artifact, host) = (
        artifact(&place.0, "exit 0"),
        host(&place.0, vec![same_user()]),
    );
    let spool = place.0.join("spool");
    let state = host.state_dir.display().to_string();
    for path in [
        format!("{state}/node.json"),
        format!("{state}/launches/8/token"),
        "../../state/launches/7/token".to_owned(),
        format!("{}/run-a/2/rank-0", spool.display()),
    ] {
        let document = with_sources(|sources| sources[0]["path"] = json!(path));
        let before = everything(&place.0);
        let launched = launch(&artifact, &spool, &document, "rank-0");
        let why = refusal(prepare(
            &launched,
            &host.state_dir.join("launches/7"),
            &host,
            &same_user(),
        ));
        assert!(why.starts_with("source train: "), "{why}");
        assert!(
            why.contains("training output is never read from there"),
            "{why}"
        );
        assert!(
            why.contains("inside the node agent's state directory")
                || why.contains("inside the spool root"),
            "{why}"
        );
        assert_eq!(everything(&place.0), before, "{path}"); // no spool, workdir, launch files
    }
}

#[test]
fn a_working_directory_linking_into_the_agents_state_is_refused() {
    let place = Place::new("linking");
    let (artifact, host) = (
        artifact(&place.0, "exit 0"),
        host(&place.0, vec![same_user()]),
    );
    let given = place.0.join("given");
    fs::create_dir(&given).unwrap();
    std::os::unix::fs::symlink(
        host.state_dir.join("node.json"),
        given.join("metrics.jsonl"),
    )
    .unwrap();
    let mut launched = launch(&artifact, &place.0.join("spool"), &integration(), "rank-0");
    launched.working_directory = given.display().to_string();
    let launch_dir = host.state_dir.join("launches/7");
    let why = refusal(prepare(&launched, &launch_dir, &host, &same_user()));
    assert!(why.contains("given/metrics.jsonl resolves to"), "{why}");
    assert!(
        why.contains("state/node.json, inside the node agent's state"),
        "{why}"
    );
    launched.working_directory = host.state_dir.join("launches").display().to_string();
    let why = refusal(prepare(&launched, &launch_dir, &host, &same_user()));
    assert!(why.contains("/state/launches resolves to"), "{why}");
    assert!(
        why.contains("inside the node agent's state directory"),
        "{why}"
    );
    assert!(!place.0.join("spool").exists());
}

#[test]
fn an_unusable_integration_or_a_member_owning_nothing_is_refused_and_nothing_is_made() {
    let place = Place::new("integration");
    let (artifact, host) = (
        artifact(&place.0, "exit 0"),
        host(&place.0, vec![same_user()]),
    );
    let spool = place.0.join("spool");
    let channel = json!({"id": "samples", "path": "samples.jsonl", "owner": "rank-0",
                         "max_record_bytes": 64, "max_bytes_per_minute": 64,
                         "schema": {"items": [{"$ref": "file:///etc/passwd"}]}});
    let mut remote = integration();
    remote["channels"] = json!([channel]);
    for (document, member, words) in [
        (with_sources(|s| s[0]["owner"] = json!("../../x")), "../../x",
         "integration artifact refused: the run's integration artifact: artifact.sources[0].owner"),
        (remote, "rank-0", "channels[0].schema.items[0].$ref is 'file:///etc/passwd': only local references"),
        (integration(), "rank-9", "member \"rank-9\" owns no source"),
    ] {
        let before = everything(&place.0);
        let launched = launch(&artifact, &spool, &document, member);
        let why = refusal(prepare(&launched, &host.state_dir.join("launches/7"), &host, &same_user()));
        assert!(why.contains(words), "{why}");
        assert_eq!(everything(&place.0), before);
    }
}

#[test]
fn each_launchs_working_directory_is_its_run_as_users_and_no_one_elses() {
    let place = Place::new("owners");
    let users = vec![stranger(1), stranger(2)];
    let (artifact, host) = (artifact(&place.0, "exit 0"), host(&place.0, users.clone()));
    for (launch_id, member, run_as) in [(7, "rank-0", &users[0]), (8, "rank-1", &users[1])] {
        let mut launched = launch(&artifact, &place.0.join("spool"), &integration(), member);
        launched.launch_id = launch_id;
        let launch_dir = host.state_dir.join(format!("launches/{launch_id}"));
        let prepared = prepare(&launched, &launch_dir, &host, run_as).unwrap();
        let info = fs::metadata(&prepared.workdir).unwrap();
        assert_eq!(
            (info.uid(), info.gid(), mode(&prepared.workdir)),
            (run_as.uid(), run_as.id.gid, 0o700)
        );
        let args = &prepared.collector;
        let read_as = &args[args.iter().position(|a| a == "--read-as").unwrap() + 1];
        // By number: the static collector reads no directory service the host's NSS does.
        assert_eq!(read_as, &format!("{0}:{0}:{0}", run_as.uid()));
        for path in [
            &prepared.directory,
            &prepared.spool,
            &launch_dir.join("token"),
        ] {
            assert_eq!(
                fs::metadata(path).unwrap().uid(),
                nix::unistd::geteuid().as_raw()
            );
        }
    }
    let theirs = place.0.join("theirs");
    fs::create_dir(&theirs).unwrap();
    let mut launched = launch(&artifact, &place.0.join("spool"), &integration(), "rank-0");
    launched.launch_id = 9;
    launched.working_directory = theirs.display().to_string();
    let Err(Refused(why)) = wanted_user(&launched, &host) else {
        panic!("not refused")
    };
    assert!(why.contains("not a run-as user's (uid "), "{why}");
    std::os::unix::fs::lchown(&theirs, Some(users[1].uid()), Some(users[1].id.gid)).unwrap();
    assert_eq!(
        wanted_user(&launched, &host).unwrap(),
        Some(users[1].clone())
    ); // waits for it alone
    let why = refusal(prepare(
        &launched,
        &host.state_dir.join("launches/9"),
        &host,
        &users[0],
    ));
    assert!(
        why.contains(&format!(
            "is uid {}'s, not the run-as user {}'s",
            users[1].uid(),
            users[0].name()
        )),
        "{why}"
    );
}

#[test]
fn channel_schemas_are_checked_but_never_compiled_in_the_agent() {
    // What a pattern costs to compile is the tenant's choice: only the launch's collector
    // compiles it (and refuses this one), never the agent every launch shares.
    let place = Place::new("uncompiled");
    let (artifact, host) = (
        artifact(&place.0, "exit 0"),
        host(&place.0, vec![same_user()]),
    );
    let mut document = integration();
    document["channels"] = json!([{"id": "c", "path": "c.jsonl", "owner": "rank-0",
        "max_record_bytes": 64, "max_bytes_per_minute": 64,
        "schema": {"type": "string", "pattern": "(unclosed"}}]);
    assert!(crate::integration::from_json(&document.to_string(), "a").is_err());
    let launched = launch(&artifact, &place.0.join("spool"), &document, "rank-0");
    prepare(
        &launched,
        &host.state_dir.join("launches/7"),
        &host,
        &same_user(),
    )
    .unwrap();
}

#[test]
fn a_working_directory_inside_the_work_root_is_refused_whoever_owns_it() {
    let place = Place::new("inside");
    let users = vec![stranger(3)];
    let (artifact, host) = (artifact(&place.0, "exit 0"), host(&place.0, users.clone()));
    // Left by an earlier launch of the same run-as user: not this launch's to enter.
    let left = host.work_root.join("1/data");
    fs::create_dir_all(&left).unwrap();
    std::os::unix::fs::lchown(&left, Some(users[0].uid()), Some(users[0].id.gid)).unwrap();
    let mut launched = launch(&artifact, &place.0.join("spool"), &integration(), "rank-0");
    launched.working_directory = left.display().to_string();
    let Err(Refused(why)) = wanted_user(&launched, &host) else {
        panic!("not refused")
    };
    assert!(why.contains("inside the work root"), "{why}");
}
