//! Acceptance against the shared reference: every example config gets its documented
//! verdict (`prime-rl-examples/SOURCES.md`), and every labelled case of `config-cases/` gets
//! its verdict with each labelled error path among the reported ones. The reference lives in
//! `../shared/reference/` beside the repository (always there in CI).

use std::path::PathBuf;

use factory_config::{Options, Severity, validate};

fn reference() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/reference");
    assert!(
        dir.is_dir(),
        "the shared reference is missing: expected {} (clone the repo with ../shared beside it)",
        dir.display()
    );
    dir
}

fn read(path: &PathBuf) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// `(file, valid)` from the SOURCES.md table.
fn example_verdicts() -> Vec<(String, bool)> {
    let text = read(&reference().join("prime-rl-examples/SOURCES.md"));
    text.lines()
        .filter(|l| l.starts_with("| ") && l.contains(".toml |"))
        .filter_map(|l| {
            let cols: Vec<&str> = l.split('|').map(str::trim).collect();
            let file = cols.get(1)?.to_string();
            let expected = cols.get(4)?;
            let valid = expected.starts_with("valid");
            let invalid = expected.starts_with("INVALID");
            (valid || invalid).then_some((file, valid))
        })
        .collect()
}

#[test]
fn every_example_gets_its_documented_verdict() {
    let verdicts = example_verdicts();
    assert_eq!(verdicts.len(), 10, "SOURCES.md lists ten example files");
    let mut agree = 0;
    let mut problems = Vec::new();
    for (file, expected) in &verdicts {
        let text = read(&reference().join("prime-rl-examples").join(file));
        let report = validate(&text, &Options::default()).expect("examples parse");
        if report.valid == *expected {
            agree += 1;
        } else {
            let errors: Vec<String> = report
                .with_severity(Severity::Error)
                .map(|f| format!("{}: {}", f.path, f.message))
                .collect();
            problems.push(format!(
                "{file}: expected valid={expected}, errors {errors:#?}"
            ));
        }
    }
    println!("examples: {agree}/{} verdicts agree", verdicts.len());
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn legacy_hosted_example_is_refused_as_shared_lora() {
    let text = read(&reference().join("prime-rl-examples/legacy-shared-lora-hosted_rl.toml"));
    let report = validate(&text, &Options::default()).expect("parses");
    let paths = report.error_paths();
    assert!(
        paths.contains(&"model") && paths.contains(&"env"),
        "{paths:?}"
    );
    assert!(report.findings[0].message.contains("shared LoRA"));
}

#[derive(serde::Deserialize)]
struct Case {
    file: String,
    mode: String,
    valid: bool,
    error_paths: Vec<String>,
}

#[test]
fn every_labelled_case_gets_its_verdict_and_error_paths() {
    let dir = reference().join("config-cases");
    let cases: Vec<Case> =
        serde_json::from_str(&read(&dir.join("manifest.json"))).expect("manifest is JSON");
    assert_eq!(cases.len(), 61);
    let (mut verdicts, mut modes, mut covered, mut labelled) = (0, 0, 0, 0);
    let mut problems = Vec::new();
    for case in &cases {
        let text = read(&dir.join(&case.file));
        let report = validate(&text, &Options::default()).expect("cases parse");
        let paths = report.error_paths();
        if report.mode.as_str() == case.mode {
            modes += 1;
        } else {
            problems.push(format!("{}: mode {:?}", case.file, report.mode));
        }
        if report.valid == case.valid {
            verdicts += 1;
        } else {
            problems.push(format!(
                "{}: expected valid={}, got errors {:#?}",
                case.file,
                case.valid,
                report
                    .with_severity(Severity::Error)
                    .map(|f| format!("{}: {}", f.path, f.message))
                    .collect::<Vec<_>>()
            ));
        }
        for p in &case.error_paths {
            labelled += 1;
            if paths.contains(&p.as_str()) {
                covered += 1;
            } else {
                problems.push(format!(
                    "{}: labelled path {p:?} not among {paths:?}",
                    case.file
                ));
            }
        }
    }
    println!(
        "config-cases: verdict agreement {verdicts}/{}, mode agreement {modes}/{}, error-path coverage {covered}/{labelled}",
        cases.len(),
        cases.len()
    );
    assert!(problems.is_empty(), "{problems:#?}");
}
