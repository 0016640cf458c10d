//! Python packages from PyPI, the real other side of interop tests (in-toto,
//! securesystemslib, pre-commit). `.ci/run` installs them into the system
//! `python3`; elsewhere they are installed once into a virtual environment under
//! cargo's target tmp dir and reused by later runs. A test whose packages cannot
//! be had prints why and skips (CI never gets there: `.ci/run` installs them).

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

/// One venv is built at a time within a test binary.
static BUILDING: Mutex<()> = Mutex::new(());

/// An interpreter that can `import` every module in `imports`, installing the
/// PyPI `packages` into the venv `name` when the system `python3` cannot.
/// `Err` says why none could be had.
pub fn python_with(name: &str, packages: &[&str], imports: &[&str]) -> Result<Python, String> {
    let probe = format!(
        "import sys\nimport {}\nprint(sys.executable)",
        imports.join(", ")
    );
    // the system interpreter, as .ci/run provisions it (inherited environment:
    // pyenv's shims need the real HOME to find their interpreter)
    if let Some(exe) = imports_ok(Path::new("python3"), &probe) {
        return Ok(Python { exe });
    }
    let _guard = BUILDING.lock().unwrap_or_else(|e| e.into_inner());
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("venv-{name}"));
    let venv_python = venv.join("bin/python");
    if let Some(exe) = imports_ok(&venv_python, &probe) {
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
    eprintln!("installing {packages:?} from PyPI into {}", venv.display());
    let pip = Command::new(&venv_python)
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
        ])
        .args(packages)
        .output()
        .map_err(|e| format!("cannot run pip: {e}"))?;
    if !pip.status.success() {
        return Err(format!(
            "pip install {} failed: {}",
            packages.join(" "),
            String::from_utf8_lossy(&pip.stderr)
        ));
    }
    imports_ok(&venv_python, &probe)
        .map(|exe| Python { exe })
        .ok_or_else(|| {
            format!(
                "after pip install {}, {} still cannot import {imports:?}",
                packages.join(" "),
                venv_python.display()
            )
        })
}

/// The interpreter's absolute path when `python` runs `probe` (which imports the
/// modules and prints `sys.executable`).
fn imports_ok(python: &Path, probe: &str) -> Option<PathBuf> {
    let out = Command::new(python).args(["-c", probe]).output().ok()?;
    let exe = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    (out.status.success() && !exe.is_empty()).then(|| PathBuf::from(exe))
}

/// The interpreter, or a printed reason to skip: `let Some(py) = need(...) else { return };`
pub fn need(name: &str, packages: &[&str], imports: &[&str]) -> Option<Python> {
    match python_with(name, packages, imports) {
        Ok(py) => Some(py),
        Err(why) => {
            eprintln!("SKIPPED: needs the PyPI packages {packages:?}: {why}");
            None
        }
    }
}
