//! The options file: the example is complete, and a bad file's error names the field.

#[test]
fn the_example_options_file_is_complete() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("options.example.yaml");
    let options = conformance::options::Options::load(&path).expect("loads");
    options.check().expect("complete");
    assert_eq!(
        options.timeouts,
        conformance::options::Timeouts::default(),
        "the example shows the defaults"
    );
}

#[test]
fn options_errors_name_the_field() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("o.yaml");
    std::fs::write(&path, "className: x\ntimeouts: {provisioned: soon}\n").expect("write");
    let err = conformance::options::Options::load(&path)
        .expect_err("bad")
        .to_string();
    assert!(
        err.contains("timeouts.provisioned") || err.contains("invalid duration"),
        "{err}"
    );
    std::fs::write(&path, "className: x\n").expect("write");
    let options = conformance::options::Options::load(&path).expect("loads");
    let err = options.check().expect_err("incomplete");
    assert!(err.starts_with("podTemplates.fits:"), "{err}");
}
