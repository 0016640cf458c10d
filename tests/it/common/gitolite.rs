//! A real hosting server for tests: gitolite3 behind its own `sshd` on 127.0.0.1.
//!
//! Each [`Gitolite`] is private to one test: a temporary directory holds the
//! server's HOME (gitolite's `.gitolite.rc`, `repositories/`, `local/` code and
//! the `authorized_keys` gitolite writes), the sshd config and host key, and ssh
//! keys for `admin`, `alice`, `bob` and `ci`. gitolite runs as the current user,
//! told apart per key by the `command=` lines it writes, as on a real server. The
//! sshd runs in its own process group; dropping the server kills the group and
//! asserts that its port is free. When `sshd` or `gitolite` is not installed,
//! [`Gitolite::start`] prints why and returns `None`, and the test skips; with `CI`
//! set it panics instead (`.ci/run` installs both: CI never skips), through
//! [`super::require_tool`].

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::{Env, bin};

const SSHD: &str = "/usr/sbin/sshd";
/// The users with a key: the administrator, two writers and CI.
pub const USERS: [&str; 4] = ["admin", "alice", "bob", "ci"];

/// gitolite3 behind a private sshd; stopped when dropped.
pub struct Gitolite {
    child: std::process::Child,
    pub port: u16,
    /// The server account's HOME (gitolite's).
    pub home: PathBuf,
    /// Where the users' private keys are.
    pub keys: PathBuf,
    /// The unix user gitolite runs as (the ssh login).
    pub login: String,
    /// The admin's clone of gitolite-admin.
    pub admin: PathBuf,
    /// Whether the server's git-receipt is on the hooks' PATH (via `.gitolite.rc`).
    pub tool_on_path: bool,
}

/// How to install what the gitolite tests need.
const INSTALL: &str = "apt-get install openssh-server gitolite3 openssh-client";

/// Whether the gitolite tests can run here: each tool is looked for with
/// [`super::require_tool`], which prints why not (or panics under `CI`).
fn available() -> bool {
    for tool in [SSHD, "gitolite", "ssh", "ssh-keygen"] {
        if !super::require_tool(tool, INSTALL) {
            return false;
        }
    }
    // sshd refuses to start without its privilege separation directory
    let privsep = Path::new("/run/sshd");
    let missing = (!privsep.is_dir() && std::fs::create_dir_all(privsep).is_err())
        .then(|| "it is missing and cannot be created, and sshd needs it".to_owned());
    super::require("/run/sshd", missing, "mkdir /run/sshd as root")
}

fn run_ok(cmd: &mut Command, what: &str) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// The `.gitolite.rc` changes a team makes for git-receipt (docs/servers.md
/// quotes them): site-local code on the server, repo-specific hooks, `receipt.*`
/// settable from gitolite.conf, and git-receipt on the hooks' PATH.
pub fn rc_for_receipts(rc: &str, tool_dir: Option<&Path>) -> String {
    let mut rc = rc.replace(
        "# LOCAL_CODE                =>  \"$ENV{HOME}/local\",",
        "LOCAL_CODE                =>  \"$ENV{HOME}/local\",",
    );
    rc = rc.replace("# 'repo-specific-hooks',", "'repo-specific-hooks',");
    rc = rc.replace(
        "GIT_CONFIG_KEYS                 =>  '',",
        "GIT_CONFIG_KEYS                 =>  'receipt\\..*',",
    );
    assert!(
        rc.contains("    LOCAL_CODE ")
            && rc.contains("\n            'repo-specific-hooks',")
            && rc.contains("'receipt\\..*'"),
        "this gitolite's .gitolite.rc has other lines than expected:\n{rc}"
    );
    if let Some(dir) = tool_dir {
        rc = format!("$ENV{{PATH}} = \"{}:$ENV{{PATH}}\";\n{rc}", dir.display());
    }
    rc
}

impl Gitolite {
    /// Start a server, or say why not and return `None` (outside CI). With `tool_on_path`,
    /// `.gitolite.rc` puts the git-receipt under test on the hooks' PATH.
    pub fn start(env: &Env, tool_on_path: bool) -> Option<Gitolite> {
        if !available() {
            return None;
        }
        let root = env.path("gitolite");
        let home = root.join("home");
        let keys = root.join("keys");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&keys).unwrap();
        for name in USERS.iter().chain(&["host"]) {
            run_ok(
                Command::new("ssh-keygen")
                    .args(["-q", "-t", "ed25519", "-N", "", "-C", name, "-f"])
                    .arg(keys.join(name))
                    .stdin(Stdio::null()),
                "ssh-keygen",
            );
        }
        let login = run_ok(Command::new("id").arg("-un"), "id -un");
        let path = std::env::var_os("PATH").unwrap_or_default();
        let gitolite = |args: &[&str]| {
            let mut cmd = Command::new("gitolite");
            cmd.args(args)
                .env_clear()
                .env("HOME", &home)
                .env("PATH", &path)
                .env("LC_ALL", "C")
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .stdin(Stdio::null());
            run_ok(&mut cmd, &format!("gitolite {args:?}"))
        };
        std::fs::copy(keys.join("admin.pub"), root.join("admin.pub")).unwrap();
        gitolite(&["setup", "-pk", root.join("admin.pub").to_str().unwrap()]);
        let rc_path = home.join(".gitolite.rc");
        let rc = std::fs::read_to_string(&rc_path).unwrap();
        let tool_dir = bin().parent().unwrap().to_owned();
        std::fs::write(
            &rc_path,
            rc_for_receipts(&rc, tool_on_path.then_some(tool_dir.as_path())),
        )
        .unwrap();
        std::fs::create_dir_all(home.join("local/hooks/repo-specific")).unwrap();
        gitolite(&["setup"]);

        let config = root.join("sshd_config");
        std::fs::write(
            &config,
            format!(
                "ListenAddress 127.0.0.1\nHostKey {}\nPidFile none\nAuthorizedKeysFile {}\n\
                 StrictModes no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n\
                 UsePAM no\nPermitRootLogin prohibit-password\nSetEnv HOME={} LC_ALL=C GIT_CONFIG_NOSYSTEM=1\n\
                 LogLevel ERROR\n",
                keys.join("host").display(),
                home.join(".ssh/authorized_keys").display(),
                home.display(),
            ),
        )
        .unwrap();
        for _ in 0..20 {
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            let mut cmd = Command::new(SSHD);
            cmd.args(["-D", "-e", "-f"])
                .arg(&config)
                .arg("-p")
                .arg(port.to_string())
                .env_clear()
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            // sshd forks a process per connection: a group of their own lets Drop end them all
            std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
            let mut child = cmd.spawn().expect("sshd");
            for _ in 0..200 {
                if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                    let mut server = Gitolite {
                        child,
                        port,
                        admin: root.join("gitolite-admin"),
                        home,
                        keys,
                        login,
                        tool_on_path,
                    };
                    server.clone_admin(env);
                    return Some(server);
                }
                if child.try_wait().unwrap().is_some() {
                    break; // port taken meanwhile: try another
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            super::kill_group(&mut child);
        }
        panic!("sshd did not start");
    }

    /// The `core.sshCommand` that connects as `user`.
    pub fn ssh_command(&self, user: &str) -> String {
        format!(
            "ssh -F /dev/null -o BatchMode=yes -o IdentitiesOnly=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -i {}",
            self.keys.join(user).display()
        )
    }

    /// The URL of repository `name`.
    pub fn url(&self, name: &str) -> String {
        format!("ssh://{}@127.0.0.1:{}/{name}", self.login, self.port)
    }

    /// Where repository `name` lives on the server.
    pub fn repo_dir(&self, name: &str) -> PathBuf {
        self.home.join("repositories").join(format!("{name}.git"))
    }

    /// Clone `name`'s `main` as `user` into `rel` of `env`; the clone keeps
    /// connecting as `user`. (gitolite's repositories have HEAD -> master, so a
    /// plain clone would check out nothing.)
    pub fn clone_as(&self, env: &Env, user: &str, name: &str, rel: &str) -> PathBuf {
        let dir = env.path(rel);
        let ssh = format!("core.sshCommand={}", self.ssh_command(user));
        env.git_ok(
            env.tmp.path(),
            &[
                "clone",
                "-q",
                "-b",
                "main",
                "-c",
                &ssh,
                &self.url(name),
                dir.to_str().unwrap(),
            ],
        );
        dir
    }

    fn clone_admin(&mut self, env: &Env) {
        let admin = self.admin.clone();
        let ssh = format!("core.sshCommand={}", self.ssh_command("admin"));
        env.git_ok(
            env.tmp.path(),
            &[
                "clone",
                "-q",
                "-c",
                &ssh,
                &self.url("gitolite-admin"),
                admin.to_str().unwrap(),
            ],
        );
        for user in USERS {
            std::fs::copy(
                self.keys.join(format!("{user}.pub")),
                admin.join(format!("keydir/{user}.pub")),
            )
            .unwrap();
        }
    }

    /// Replace gitolite.conf with `conf` (the admin repository's rules are kept
    /// first) and push it through gitolite-admin, as an administrator does.
    pub fn configure(&self, env: &Env, conf: &str) {
        let text = format!("repo gitolite-admin\n    RW+ = admin\n\n{conf}");
        std::fs::write(self.admin.join("conf/gitolite.conf"), text).unwrap();
        env.git_ok(&self.admin, &["add", "-A"]);
        env.git_ok(&self.admin, &["commit", "-qm", "configure"]);
        let r = env.git(&self.admin, &["push", "-q", "origin", "HEAD"]);
        assert_eq!(r.code, 0, "pushing gitolite-admin: {r}");
        assert!(!r.stderr.contains("FATAL"), "{r}");
    }

    /// Install a repo-specific hook file under `local/hooks/repo-specific/`
    /// (server-side, as LOCAL_CODE = $HOME/local has it).
    pub fn put_repo_specific_hook(&self, name: &str, text: &str) {
        use std::os::unix::fs::PermissionsExt;
        let path = self.home.join("local/hooks/repo-specific").join(name);
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// The git sessions gitolite has logged so far, oldest first, as
    /// `<user> <command> <repo>` (e.g. `alice git-receive-pack app`).
    pub fn sessions(&self) -> Vec<String> {
        let mut out = Vec::new();
        let Ok(dir) = std::fs::read_dir(self.home.join(".gitolite/logs")) else {
            return out;
        };
        let mut files: Vec<PathBuf> = dir.map(|e| e.unwrap().path()).collect();
        files.sort();
        for f in files {
            for line in std::fs::read_to_string(f).unwrap().lines() {
                let fields: Vec<&str> = line.split('\t').collect();
                if fields.get(2) != Some(&"ssh") {
                    continue;
                }
                let user = fields.iter().find_map(|f| f.strip_prefix("ARGV="));
                let soc = fields.iter().find_map(|f| f.strip_prefix("SOC="));
                if let (Some(user), Some((cmd, repo))) = (user, soc.and_then(|s| s.split_once(' ')))
                {
                    let repo = repo.trim_matches('\'').trim_start_matches('/');
                    out.push(format!("{user} {cmd} {repo}"));
                }
            }
        }
        out
    }

    /// Run `gitolite setup` on the server (what restores gitolite's hooks).
    pub fn setup(&self) {
        let mut cmd = Command::new("gitolite");
        cmd.arg("setup")
            .env_clear()
            .env("HOME", &self.home)
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .stdin(Stdio::null());
        run_ok(&mut cmd, "gitolite setup");
    }
}

impl Drop for Gitolite {
    fn drop(&mut self) {
        super::kill_group(&mut self.child);
        let mut listening = true;
        for _ in 0..200 {
            if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
                listening = false;
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        if !std::thread::panicking() {
            assert!(
                !listening,
                "sshd still listens on 127.0.0.1:{} after the test",
                self.port
            );
        }
    }
}
