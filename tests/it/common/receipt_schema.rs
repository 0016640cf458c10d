//! Validating stored receipts against `docs/receipt.schema.json`.

use std::path::Path;

/// `docs/receipt.schema.json`, compiled.
pub fn validator() -> jsonschema::Validator {
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/receipt.schema.json"),
        )
        .unwrap(),
    )
    .unwrap();
    jsonschema::draft202012::new(&schema).unwrap()
}

/// `docs/receipt.schema.json` accepts the stored receipt (the parser already did).
pub fn assert_schema_accepts(stored: &serde_json::Value) {
    let errors: Vec<String> = validator()
        .iter_errors(stored)
        .map(|e| e.to_string())
        .collect();
    assert!(
        errors.is_empty(),
        "the schema refuses a real receipt: {errors:?}\n{stored}"
    );
}
