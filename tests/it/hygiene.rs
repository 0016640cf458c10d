//! Write hygiene: a dirty `run` scans the work tree once and still checks exactly
//! the tree `git add -A` would stage (stock git is the oracle); writers leave the
//! repository packed the way git's own commands do (`git gc --auto`, detached);
//! your own notes survive a plain `git fetch` in a clone where `init` ran after
//! the key existed. And source hygiene: the library's import graph (`src/` but the
//! binary's `main.rs` and `cli/`) has no cycle, and the store imports nothing above it.

use crate::common::{self, Daemon, Env};
use std::path::Path;

/// The tree stock git writes for the work tree as if everything were staged:
/// `git add -A` into a copy of the index, then `git write-tree`.
fn oracle_tree(env: &Env, dir: &Path) -> String {
    let index = env.path("oracle-index");
    std::fs::copy(dir.join(".git/index"), &index).unwrap();
    let mut add = std::process::Command::new("git");
    env.seal(&mut add);
    let out = add
        .current_dir(dir)
        .env("GIT_INDEX_FILE", &index)
        .args(["add", "-A"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut write = std::process::Command::new("git");
    env.seal(&mut write);
    let out = write
        .current_dir(dir)
        .env("GIT_INDEX_FILE", &index)
        .arg("write-tree")
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// The subject tree of the newest receipt in `dir`.
fn receipt_tree(env: &Env, dir: &Path) -> (String, bool) {
    let log = env.log_json(dir);
    let newest = &log[0];
    (
        newest["tree"].as_str().unwrap().to_owned(),
        newest["dirty"].as_bool().unwrap(),
    )
}

fn messy(env: &Env, rel: &str, extra_files: usize) -> std::path::PathBuf {
    let dir = env.path(rel);
    let mut cmd = std::process::Command::new("bash");
    cmd.arg(common::fixture("make_messy_worktree.sh"))
        .arg(&dir)
        .arg(extra_files.to_string());
    env.seal(&mut cmd);
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "fixture failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    dir
}

fn assert_checks_what_git_add_all_stages(extra_files: usize) {
    let env = Env::new();
    let dir = messy(&env, "messy", extra_files);
    let status = env.git_ok(&dir, &["status", "--porcelain=v1"]);
    let index = |env: &Env| {
        // entries and what is staged (an intent-to-add entry shows as added)
        let entries = env.git_ok(&dir, &["ls-files", "--stage", "-z"]);
        let staged = env.git_ok(&dir, &["diff", "--cached", "--name-status", "-z"]);
        (entries, staged)
    };
    let index_before = index(&env);
    env.receipt_ok(&dir, &["run", "noop", "--", "true"]);
    let (tree, dirty) = receipt_tree(&env, &dir);
    assert_eq!(index(&env), index_before, "the user's index is untouched");
    let oracle = oracle_tree(&env, &dir);
    assert_eq!(
        tree, oracle,
        "the receipt's tree is the tree `git add -A && git write-tree` gives, for a work tree with:\n{status}"
    );
    assert!(dirty, "a work tree with changes is dirty");
    // and the tree holds what the mess made, so the oracle is not trivially equal
    let listed = env.git_ok(&dir, &["ls-tree", "-r", "-z", "--name-only", &tree]);
    let names: Vec<&str> = listed.split('\0').collect();
    for present in [
        "*",
        ":(exclude)src",
        "src/[ab].rs",
        "line\nbreak.txt",
        "docs/new-name.md",
        "docs/new-name-2.md",
        "new/deeper/x.rs",
        "embedded",
        "sub",
    ] {
        assert!(names.contains(&present), "{present:?} in {names:?}");
    }
    for absent in [
        "docs/old-name.md",
        "docs/old-name-2.md",
        "docs/gone-staged.md",
        "docs/gone-unstaged.md",
        "debug.log",
    ] {
        assert!(!names.contains(&absent), "{absent:?} not in {names:?}");
    }
}

#[test]
fn a_dirty_run_checks_exactly_the_tree_git_add_all_stages() {
    assert_checks_what_git_add_all_stages(0);
}

#[test]
fn a_dirty_run_with_thousands_of_changed_paths_checks_the_same_tree() {
    // more paths than are staged one pathspec each: the whole tree is staged
    assert_checks_what_git_add_all_stages(2500);
}

#[test]
fn a_run_with_only_staged_changes_checks_the_index_tree() {
    let env = Env::new();
    let dir = env.fixture_repo("make_basic_repo.sh", "repo");
    std::fs::write(dir.join("src/lib.rs"), "pub fn staged() {}\n").unwrap();
    env.git_ok(&dir, &["add", "src/lib.rs"]);
    env.receipt_ok(&dir, &["run", "noop", "--", "true"]);
    let (tree, dirty) = receipt_tree(&env, &dir);
    assert_eq!(tree, env.git_ok(&dir, &["write-tree"]));
    assert!(dirty);
}

/// Loose objects in one fan-out directory of `dir`'s object store.
fn loose_in(dir: &Path, fanout: &str) -> usize {
    std::fs::read_dir(dir.join(".git/objects").join(fanout))
        .map(|d| d.count())
        .unwrap_or(0)
}

fn is_loose(dir: &Path, oid: &str) -> bool {
    dir.join(".git/objects")
        .join(&oid[..2])
        .join(&oid[2..])
        .exists()
}

#[test]
fn receipts_in_a_repository_with_a_small_gc_auto_end_up_packed() {
    let env = Env::new();
    let dir = env.fixture_repo("make_basic_repo.sh", "repo");
    // Enough loose objects (deterministic: fixed contents and dates) that git's own
    // estimate, loose objects in objects/17 against gc.auto/256, is over a small
    // gc.auto.
    std::fs::create_dir_all(dir.join("data")).unwrap();
    for i in 0..600 {
        std::fs::write(dir.join(format!("data/{i}")), format!("{i}\n")).unwrap();
    }
    env.git_ok(&dir, &["add", "data"]);
    env.git_ok(&dir, &["commit", "-q", "-m", "data"]);
    assert!(
        loose_in(&dir, "17") >= 2,
        "the fixture leaves more than 1 loose object in objects/17"
    );
    // gc.auto = 0 disables: many receipts, nothing packed
    env.git_ok(&dir, &["config", "gc.auto", "0"]);
    for _ in 0..10 {
        env.receipt_ok(&dir, &["run", "noop", "--", "true"]);
    }
    let writer = env.only_writer(&dir);
    let chain = env.git_ok(&dir, &["rev-list", &format!("refs/receipts/{writer}")]);
    let chain: Vec<&str> = chain.lines().collect();
    assert_eq!(chain.len(), 10);
    assert!(
        chain.iter().all(|c| is_loose(&dir, c)),
        "nothing packed yet"
    );
    // gc.auto = 256 (one object in objects/17): the next receipt starts gc --auto
    env.git_ok(&dir, &["config", "gc.auto", "256"]);
    let r = env.receipt_ok(&dir, &["run", "noop", "--", "true"]);
    assert!(
        !r.stderr.to_lowercase().contains("pack"),
        "the detached gc says nothing: {r}"
    );
    let tip = env.git_ok(&dir, &["rev-parse", &format!("refs/receipts/{writer}")]);
    // The gc runs detached: wait for it, bounded (this asserts nothing about speed).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let packed = |c: &&str| !is_loose(&dir, c);
    while !(chain.iter().all(packed) && packed(&tip.as_str()) && !dir.join(".git/gc.pid").exists())
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(
        chain.iter().all(packed) && packed(&tip.as_str()),
        "every receipt's chain commit ends up in a pack"
    );
    assert!(
        loose_in(&dir, "17") <= 1,
        "git's own estimate is under gc.auto again"
    );
    env.receipt_ok(&dir, &["verify"]);
}

fn clone(env: &Env, url: &str, rel: &str) -> std::path::PathBuf {
    let dir = env.path(rel);
    env.git_ok(env.tmp.path(), &["clone", "-q", url, dir.to_str().unwrap()]);
    dir
}

#[test]
fn init_in_a_clone_where_the_key_already_exists_keeps_plain_fetch_off_your_own_chain() {
    let env = Env::new(); // one HOME, one key, two clones
    let daemon = Daemon::start(&env);
    let seed = env.fixture_repo("make_basic_repo.sh", "seed");
    let (_, url) = daemon.bare(&env, "shared.git");
    env.git_ok(&seed, &["push", "-q", url.as_str(), "main"]);
    // clone a creates the key and pushes a receipt
    let a = clone(&env, &url, "a");
    env.receipt_ok(&a, &["init"]);
    env.receipt_ok(&a, &["run", "test"]);
    env.receipt_ok(&a, &["push"]);
    let me = env.only_writer(&a);
    // clone b: the key exists already when init runs
    let b = clone(&env, &url, "b");
    env.receipt_ok(&b, &["init"]);
    let fetch_specs = env.git_ok(&b, &["config", "--get-all", "remote.origin.fetch"]);
    for spec in [
        format!("^refs/receipts/{me}"),
        format!("^refs/notes/receipts/{me}"),
    ] {
        assert!(
            fetch_specs.lines().any(|l| l == spec),
            "init excludes your own refs: {spec} in\n{fetch_specs}"
        );
    }
    std::fs::write(b.join("docs/index.md"), "# more docs\n").unwrap();
    env.git_ok(&b, &["commit", "-qam", "docs"]);
    env.receipt_ok(&b, &["run", "docs"]); // not pushed
    let mine = env.log_json(&b)[0]["id"].as_str().unwrap().to_owned();
    let chain_before = env.git_ok(&b, &["rev-parse", &format!("refs/receipts/{me}")]);
    // clone a writes and pushes again: the remote's notes of this writer move on
    env.receipt_ok(&a, &["run", "docs"]);
    env.receipt_ok(&a, &["push"]);
    let r = env.git(&b, &["fetch"]);
    assert_eq!(
        r.code, 0,
        "a plain fetch neither rejects nor forces your refs: {r}"
    );
    assert_eq!(
        env.git_ok(&b, &["rev-parse", &format!("refs/receipts/{me}")]),
        chain_before,
        "your chain is untouched"
    );
    let note = env.git_ok(
        &b,
        &["notes", &format!("--ref=receipts/{me}"), "show", "HEAD"],
    );
    assert!(
        note.contains(&mine),
        "your unpushed receipt still shows in your notes: {note}"
    );
    let status = env.receipt(&b, &["status", "--json"]);
    assert!(status.stdout.contains(&mine), "and in status: {status}");
}

// ---------------------------------------------------------------------------------------
// Source hygiene: the library's layers form a DAG, and the store is below the policy.
// ---------------------------------------------------------------------------------------

/// The modules the store (`src/store/`) may import besides its own files: the
/// format, the codecs and the primitives below it. Nothing that decides (contract,
/// trust, freshness, decision, ...) and nothing of the user's keys (keyfile).
const STORE_MAY_IMPORT: &[&str] = &[
    "agent", "canon", "clock", "notice", "receipt", "sign", "text", "user_dir", "wire",
];

/// One library source file: its module path (`store::index::mac`) and its text
/// without the unit tests (`#[cfg(test)] mod tests` and what follows it: tests may
/// reach anywhere).
struct Module {
    name: String,
    path: std::path::PathBuf,
    text: String,
}

/// Every `.rs` file of the library: all of `src/` but `main.rs`, `lib.rs` and the
/// binary's `cli/`.
fn library_modules() -> Vec<Module> {
    fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    walk(&src, &mut files);
    let mut out = Vec::new();
    for path in files {
        let rel = path.strip_prefix(&src).unwrap().with_extension("");
        let rel = rel.to_str().unwrap().replace('\\', "/");
        if rel == "main" || rel == "lib" || rel == "cli" || rel.starts_with("cli/") {
            continue;
        }
        let name = rel.strip_suffix("/mod").unwrap_or(&rel).replace('/', "::");
        let full = std::fs::read_to_string(&path).unwrap();
        let text = match full.find("#[cfg(test)]\nmod tests") {
            Some(at) => full[..at].to_owned(),
            None => full,
        };
        out.push(Module { name, path, text });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// The paths a `use` tree or path expression starting at `text` names, each as
/// segments: `a::b::{c, d::{e, f as g}, self}` gives `a::b::c`, `a::b::d::e`,
/// `a::b::d::f` and `a::b`.
fn paths_at(text: &str) -> Vec<Vec<String>> {
    fn tree(s: &[u8], i: &mut usize, prefix: &[String], out: &mut Vec<Vec<String>>) {
        let mut path = prefix.to_vec();
        loop {
            let start = *i;
            while *i < s.len() && (s[*i].is_ascii_alphanumeric() || s[*i] == b'_') {
                *i += 1;
            }
            let seg = std::str::from_utf8(&s[start..*i]).unwrap();
            if !seg.is_empty() && seg != "self" {
                path.push(seg.to_owned());
            }
            if s[*i..].starts_with(b"::{") {
                *i += 3;
                loop {
                    while *i < s.len() && s[*i].is_ascii_whitespace() {
                        *i += 1;
                    }
                    if *i >= s.len() || s[*i] == b'}' {
                        break;
                    }
                    tree(s, i, &path, out);
                    // skip `as name` and anything else up to the next item
                    let mut depth = 0;
                    while *i < s.len() {
                        match s[*i] {
                            b'{' => depth += 1,
                            b'}' if depth == 0 => break,
                            b'}' => depth -= 1,
                            b',' if depth == 0 => {
                                *i += 1;
                                break;
                            }
                            _ => {}
                        }
                        *i += 1;
                    }
                }
                *i += 1; // the closing brace
                return;
            }
            if s[*i..].starts_with(b"::") && start != *i {
                *i += 2;
                continue;
            }
            out.push(path);
            return;
        }
    }
    let mut out = Vec::new();
    tree(text.as_bytes(), &mut 0, &[], &mut out);
    out
}

/// The modules each library module imports (`use crate::...`, `crate::` paths in
/// code and in doc links, `super::`), to the file: an item path resolves to the
/// longest module that is a prefix of it. A module's use of its own parent (a
/// child of `store/` using `store/mod.rs`) is not an edge.
fn import_graph(modules: &[Module]) -> std::collections::BTreeMap<String, Vec<String>> {
    use std::collections::{BTreeMap, BTreeSet};
    let names: BTreeSet<&str> = modules.iter().map(|m| m.name.as_str()).collect();
    let resolve = |segments: &[String]| -> Option<String> {
        (1..=segments.len())
            .rev()
            .map(|n| segments[..n].join("::"))
            .find(|c| names.contains(c.as_str()))
    };
    let mut graph = BTreeMap::new();
    for m in modules {
        let me: Vec<String> = m.name.split("::").map(str::to_owned).collect();
        let mut to = BTreeSet::new();
        let mut add = |target: Option<String>| {
            if let Some(t) = target
                && t != m.name
                && !m.name.starts_with(&format!("{t}::"))
            {
                to.insert(t);
            }
        };
        for (at, _) in m.text.match_indices("crate::") {
            // `$crate::` in a macro is the same crate; `foo_crate::` is not ours
            let before = m.text[..at].chars().next_back();
            if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
                continue;
            }
            for p in paths_at(&m.text[at + "crate::".len()..]) {
                add(resolve(&p));
            }
        }
        for (at, _) in m.text.match_indices("super::") {
            let before = m.text[..at].chars().next_back();
            if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
                continue; // the second `super::` of `super::super::`, counted below
            }
            let mut rest = &m.text[at..];
            let mut base = me.clone();
            while let Some(r) = rest.strip_prefix("super::") {
                base.pop();
                rest = r;
            }
            for p in paths_at(rest) {
                let full: Vec<String> = base.iter().cloned().chain(p).collect();
                add(resolve(&full));
            }
        }
        graph.insert(m.name.clone(), to.into_iter().collect());
    }
    graph
}

/// A cycle of `graph`, as `a -> b -> a`, if it has one.
fn find_cycle(graph: &std::collections::BTreeMap<String, Vec<String>>) -> Option<String> {
    fn visit<'a>(
        node: &'a str,
        graph: &'a std::collections::BTreeMap<String, Vec<String>>,
        done: &mut std::collections::BTreeSet<&'a str>,
        stack: &mut Vec<&'a str>,
    ) -> Option<String> {
        if let Some(at) = stack.iter().position(|n| *n == node) {
            let mut cycle = stack[at..].to_vec();
            cycle.push(node);
            return Some(cycle.join(" -> "));
        }
        if !done.insert(node) {
            return None;
        }
        stack.push(node);
        for next in graph.get(node).into_iter().flatten() {
            if let Some(c) = visit(next, graph, done, stack) {
                return Some(c);
            }
        }
        stack.pop();
        None
    }
    let mut done = std::collections::BTreeSet::new();
    graph
        .keys()
        .find_map(|n| visit(n, graph, &mut done, &mut Vec::new()))
}

#[test]
fn the_parser_reads_use_groups_nested_groups_and_renames() {
    let got = paths_at("store::{Store, index::{Index as I, Role}, self};");
    let got: Vec<String> = got.iter().map(|p| p.join("::")).collect();
    assert_eq!(
        got,
        [
            "store::Store",
            "store::index::Index",
            "store::index::Role",
            "store"
        ]
    );
    let got = paths_at("clock::now_ms().saturating_add(1)");
    assert_eq!(got, [vec!["clock".to_owned(), "now_ms".to_owned()]]);
}

#[test]
fn the_cycle_finder_names_a_cycle_and_passes_a_dag() {
    let graph = |edges: &[(&str, &[&str])]| {
        edges
            .iter()
            .map(|(a, b)| (a.to_string(), b.iter().map(|s| s.to_string()).collect()))
            .collect()
    };
    let dag = graph(&[("a", &["b", "c"]), ("b", &["c"]), ("c", &[])]);
    assert_eq!(find_cycle(&dag), None);
    let circle = graph(&[("a", &["b"]), ("b", &["c"]), ("c", &["a"])]);
    assert_eq!(find_cycle(&circle).as_deref(), Some("a -> b -> c -> a"));
}

#[test]
fn the_library_import_graph_is_a_dag_and_the_store_imports_only_what_is_below_it() {
    let modules = library_modules();
    let graph = import_graph(&modules);
    let edges: usize = graph.values().map(Vec::len).sum();
    // so that a parser that finds nothing cannot pass: the library has some 40
    // files and about 90 edges between them
    assert!(
        modules.len() >= 35,
        "found only {} library modules: {:?}",
        modules.len(),
        graph.keys().collect::<Vec<_>>()
    );
    assert!(edges >= 60, "found only {edges} import edges: {graph:#?}");
    for (from, to) in [
        ("decision", "freshness"),
        ("store::chain", "store::admit"),
        ("store", "receipt"),
        ("agent", "wire"),
    ] {
        assert!(
            graph[from].iter().any(|t| t == to),
            "the known edge {from} -> {to} is found: {graph:#?}"
        );
    }
    if let Some(cycle) = find_cycle(&graph) {
        panic!("the library's import graph has a cycle: {cycle}");
    }
    let mut refused = Vec::new();
    for (from, targets) in &graph {
        if from != "store" && !from.starts_with("store::") {
            continue;
        }
        for to in targets {
            let own = to == "store" || to.starts_with("store::");
            if !own && !STORE_MAY_IMPORT.contains(&to.as_str()) {
                let file = &modules.iter().find(|m| &m.name == from).unwrap().path;
                refused.push(format!("{from} ({}) -> {to}", file.display()));
            }
        }
    }
    assert!(
        refused.is_empty(),
        "the store imports only {STORE_MAY_IMPORT:?} besides itself, but:\n{}",
        refused.join("\n")
    );
}

/// The string literals of `code` (lines that are comments left out), as written
/// between their quotes: escapes are not decoded, so `\nhint:` shows as such.
fn string_literals(code: &str) -> Vec<String> {
    let code: String = code
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .map(|l| format!("{l}\n"))
        .collect();
    let s = code.as_bytes();
    let (mut out, mut i) = (Vec::new(), 0);
    while i < s.len() {
        match s[i] {
            // a char literal: '"', '\"', 'x' (a lifetime has no closing quote)
            b'\'' if s.get(i + 1) == Some(&b'\\') => i += 4,
            b'\'' if s.get(i + 2) == Some(&b'\'') => i += 3,
            b'"' => {
                let start = i + 1;
                i += 1;
                while i < s.len() && s[i] != b'"' {
                    i += if s[i] == b'\\' { 2 } else { 1 };
                }
                out.push(String::from_utf8_lossy(&s[start..i.min(s.len())]).into_owned());
                i += 1;
            }
            _ => i += 1,
        }
    }
    out
}

/// Each `name!` of `macros` used in `code`, as `name!`.
fn macro_uses(code: &str, macros: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for (at, _) in code.match_indices('!') {
        let ident: String = code[..at]
            .chars()
            .rev()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        if macros.contains(&ident.as_str()) {
            found.push(format!("{ident}!"));
        }
    }
    found
}

#[test]
fn the_scanners_find_prints_and_hints_in_code_but_not_in_comments() {
    let code =
        "// eprintln!(\"hint: x\")\nlet c = '\"'; eprint!(\"a\\nhint: b\"); println!(\"{}\", 'x');";
    assert_eq!(
        macro_uses(code, &["eprintln", "eprint", "println", "print"]),
        ["eprintln!", "eprint!", "println!"],
        "comments are not left out of the macro scan, which is by design a little strict"
    );
    let literals = string_literals(code);
    assert_eq!(literals, ["a\\nhint: b", "{}"]);
}

#[test]
fn the_library_prints_nothing_and_writes_no_hints() {
    // diagnostics are data (notices, errors with fields); the CLI prints them and
    // attaches the hints: so no printing macro and no `hint:` text below cli/
    let modules = library_modules();
    assert!(modules.len() >= 35, "found {} modules", modules.len());
    let mut found = Vec::new();
    let mut literals = 0;
    for m in &modules {
        // the whole file, unit tests included
        let full = std::fs::read_to_string(&m.path).unwrap();
        for mac in macro_uses(&full, &["eprintln", "eprint", "println", "print"]) {
            found.push(format!("{}: {mac}", m.path.display()));
        }
        let strings = string_literals(&full);
        literals += strings.len();
        for s in strings.iter().filter(|s| s.contains("hint:")) {
            found.push(format!("{}: {s:?}", m.path.display()));
        }
    }
    assert!(literals > 1000, "found only {literals} string literals");
    assert!(
        found.is_empty(),
        "the library prints or writes hints (push a notice, or give the error a \
         field and the hint to src/cli/hints.rs):\n{}",
        found.join("\n")
    );
}
