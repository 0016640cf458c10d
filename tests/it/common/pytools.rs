//! Python packages from PyPI, the real other side of interop tests (in-toto,
//! securesystemslib, pre-commit, the MCP client), at the versions pinned with
//! their hashes in `tests/requirements.txt` (made by `.ci/pin-python` from
//! `tests/requirements.in`). `.ci/run` installs that file into the system
//! `python3`; where it cannot (PEP 668), or outside CI, the file is installed once
//! with `--require-hashes` into a virtual environment under cargo's target tmp dir
//! and reused by later runs until the file changes. A test whose packages cannot
//! be had skips with `SKIPPED:` on stderr, or fails when `CI` is set
//! ([`super::require`]).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// A Python interpreter that imports the packages asked for.
pub struct Python {
    /// Absolute path of the interpreter (no pyenv shim: it runs under a sealed HOME).
    pub exe: PathBuf,
}

impl Python {
    /// A command running this interpreter.
    pub fn command(&self) -> Command {
        Command::new(&self.exe)
    }
}

/// One venv is built at a time: every test runs in this one process.
static BUILDING: Mutex<()> = Mutex::new(());

/// The pinned requirements file.
pub fn requirements() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/requirements.txt")
}

/// A PyPI name as pip compares them (PEP 503): lower case, runs of `-_.` as `-`.
fn normalize(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            if !out.ends_with('-') {
                out.push('-');
            }
        } else {
            out.push(c.to_ascii_lowercase());
        }
    }
    out
}

/// The version `tests/requirements.txt` pins `package` at.
fn pinned_version(text: &str, package: &str) -> Option<String> {
    let want = normalize(package);
    text.lines().find_map(|line| {
        let (name, rest) = line.split_once("==")?;
        let version = rest.split_whitespace().next()?;
        (normalize(name.trim()) == want).then(|| version.to_owned())
    })
}

/// An interpreter that can `import` every module in `imports` and has the PyPI
/// `packages` at their pinned versions: the system `python3` when it has them,
/// else the venv built from `tests/requirements.txt`. `Err` says why none could
/// be had.
pub fn python_with(packages: &[&str], imports: &[&str]) -> Result<Python, String> {
    let reqs = requirements();
    let pins = std::fs::read_to_string(&reqs)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", reqs.display()));
    let mut checks = String::new();
    for package in packages {
        let version = pinned_version(&pins, package).unwrap_or_else(|| {
            panic!(
                "{package} is not pinned in {}: add it to tests/requirements.in and run .ci/pin-python",
                reqs.display()
            )
        });
        checks.push_str(&format!(
            "if m.version({package:?}) != {version:?}: sys.exit('{package} ' + m.version({package:?}) + ' is not the pinned {version}')\n"
        ));
    }
    if let Some(hidden) = packages.iter().find(|p| super::hidden(p)) {
        return Err(format!("{hidden} is hidden by {}", super::HIDE_TOOLS));
    }
    let probe = format!(
        "import sys\nimport importlib.metadata as m\nimport {}\n{checks}print(sys.executable)",
        imports.join(", ")
    );
    // the system interpreter, as .ci/run provisions it (inherited environment:
    // pyenv's shims need the real HOME to find their interpreter)
    if let Some(exe) = imports_ok(Path::new("python3"), &probe) {
        return Ok(Python { exe });
    }
    let _guard = BUILDING.lock().unwrap_or_else(|e| e.into_inner());
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join("venv-pinned");
    let venv_python = venv.join("bin/python");
    // the copy of the requirements the venv was built from: a changed pin rebuilds it
    let stamp = venv.join("requirements.txt");
    if std::fs::read_to_string(&stamp).is_ok_and(|built| built == pins)
        && let Some(exe) = imports_ok(&venv_python, &probe)
    {
        return Ok(Python { exe });
    }
    let _ = std::fs::remove_dir_all(&venv);
    let made = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&venv)
        .output()
        .map_err(|e| format!("cannot run python3: {e}"))?;
    if !made.status.success() {
        return Err(format!(
            "python3 -m venv failed: {}",
            String::from_utf8_lossy(&made.stderr)
        ));
    }
    eprintln!(
        "installing {} from PyPI into {}",
        reqs.display(),
        venv.display()
    );
    let pip = Command::new(&venv_python)
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--require-hashes",
            "-r",
        ])
        .arg(&reqs)
        .output()
        .map_err(|e| format!("cannot run pip: {e}"))?;
    if !pip.status.success() {
        return Err(format!(
            "pip install --require-hashes -r {} failed: {}",
            reqs.display(),
            String::from_utf8_lossy(&pip.stderr)
        ));
    }
    std::fs::write(&stamp, &pins).unwrap();
    imports_ok(&venv_python, &probe)
        .map(|exe| Python { exe })
        .ok_or_else(|| {
            format!(
                "after pip install -r {}, {} still cannot import {imports:?} at the pinned versions",
                reqs.display(),
                venv_python.display()
            )
        })
}

/// The interpreter's absolute path when `python` runs `probe` (which imports the
/// modules, checks the versions and prints `sys.executable`).
fn imports_ok(python: &Path, probe: &str) -> Option<PathBuf> {
    let out = Command::new(python).args(["-c", probe]).output().ok()?;
    let exe = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    (out.status.success() && !exe.is_empty()).then(|| PathBuf::from(exe))
}

/// The interpreter, or `None` after [`super::require`] printed why the test
/// skips (it panics instead when `CI` is set):
/// `let Some(py) = need(...) else { return };`
pub fn need(packages: &[&str], imports: &[&str]) -> Option<Python> {
    let what = format!("the pinned PyPI set {}", packages.join(" + "));
    match python_with(packages, imports) {
        Ok(py) => Some(py),
        Err(why) => {
            super::require(
                &what,
                Some(why),
                "python3 -m pip install --require-hashes -r tests/requirements.txt",
            );
            None
        }
    }
}
