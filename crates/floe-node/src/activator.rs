//! Starting server processes as IceGrid's node does: the descriptor's executable and
//! options, then `--Ice.Config=<server dir>/config/config`; its environment variables (with
//! `$NAME` and `${NAME}` expanded from the node's environment); its working directory; its
//! user; its standard output and error in the node's output directory.

use std::ffi::CString;
use std::fs::OpenOptions;
use std::path::Path;
use std::process::Stdio;

use tokio::process::{Child, Command};

use crate::config::NodeConfig;

/// The account a server runs under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Account {
    /// User id.
    pub uid: u32,
    /// Group id.
    pub gid: u32,
}

/// The account for a descriptor's `user` attribute, as IceGrid's node decides it: a node
/// run as root runs every server as its `user`, as `nobody` when it has none, and as root
/// only with `IceGrid.Node.AllowRunningServersAsRoot`; any other node runs servers as
/// itself and refuses a `user` that is not its own. `None`: as the node.
pub fn account(user: &str, config: &NodeConfig) -> Result<Option<Account>, String> {
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    if euid == 0 {
        let account = lookup(if user.is_empty() { "nobody" } else { user })?;
        if account.uid == 0 && !config.allow_running_servers_as_root {
            return Err("running server as `root' is not allowed".into());
        }
        Ok(if account.uid == 0 { None } else { Some(account) })
    } else if user.is_empty() || lookup(user)?.uid == euid {
        Ok(None)
    } else {
        Err(format!("node has insufficient privileges to load server under user account `{user}'"))
    }
}

/// The account of a `session` server without a `user` attribute, allocated by session
/// `session`: a node run as root runs it as the account named like the session's id (as
/// IceGrid's node does); any other node as itself.
pub fn account_for_session(session: &str, config: &NodeConfig) -> Result<Option<Account>, String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        account(session, config)
    } else {
        Ok(None)
    }
}

/// The uid and gid of user `name`, from the password database.
fn lookup(name: &str) -> Result<Account, String> {
    let c_name = CString::new(name).map_err(|_| format!("invalid user name `{name}'"))?;
    let mut buf = vec![0 as libc::c_char; 16 * 1024];
    // SAFETY: getpwnam_r writes only into `pwd` and `buf` (of the length given) and sets
    // `result` to null or to `pwd`.
    let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
    let mut result: *mut libc::passwd = std::ptr::null_mut();
    let rc = unsafe { libc::getpwnam_r(c_name.as_ptr(), &mut pwd, buf.as_mut_ptr(), buf.len(), &mut result) };
    if rc != 0 || result.is_null() {
        return Err(format!("unknown user account `{name}'"));
    }
    Ok(Account { uid: pwd.pw_uid, gid: pwd.pw_gid })
}

/// What a server process is started with.
#[derive(Debug, Clone)]
pub struct Launch<'a> {
    /// The server id (for the output files' names).
    pub id: &'a str,
    /// The executable (looked up in `PATH` when it has no `/`).
    pub exe: &'a str,
    /// The working directory ("": the node's).
    pub pwd: &'a str,
    /// The descriptor's options.
    pub options: &'a [String],
    /// The descriptor's `NAME=VALUE` environment variables.
    pub envs: &'a [String],
    /// The configuration file passed with `--Ice.Config=`.
    pub config_file: &'a Path,
    /// Who it runs as.
    pub account: Option<Account>,
}

/// Starts the process.
pub fn spawn(launch: &Launch<'_>, config: &NodeConfig) -> Result<Child, String> {
    if launch.exe.is_empty() {
        return Err("the server has no executable".into());
    }
    let mut cmd = Command::new(launch.exe);
    cmd.args(launch.options.iter().filter(|o| !o.is_empty()));
    cmd.arg(format!("--Ice.Config={}", launch.config_file.display()));
    for env in launch.envs {
        let (name, value) = env.split_once('=').unwrap_or((env.as_str(), ""));
        if !name.is_empty() {
            cmd.env(name, expand(value));
        }
    }
    if !launch.pwd.is_empty() {
        cmd.current_dir(launch.pwd);
    }
    if let Some(a) = launch.account {
        cmd.uid(a.uid).gid(a.gid);
    }
    cmd.stdin(Stdio::null());
    if let Some(dir) = &config.output_dir {
        let open = |name: String| {
            let path = dir.join(name);
            let file = OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .map_err(|e| format!("{}: {e}", path.display()))?;
            if let Some(a) = launch.account {
                // The server opens it too (its Ice.StdOut and Ice.StdErr).
                std::os::unix::fs::lchown(&path, Some(a.uid), Some(a.gid))
                    .map_err(|e| format!("{}: {e}", path.display()))?;
            }
            Ok::<_, String>(file)
        };
        let out = open(format!("{}.out", launch.id))?;
        let err = if config.redirect_err_to_out {
            out.try_clone().map_err(|e| e.to_string())?
        } else {
            open(format!("{}.err", launch.id))?
        };
        cmd.stdout(out).stderr(err);
    }
    // A server outlives neither a node that is killed nor one that stops: its own process
    // group, so that signals to the node's group do not reach it first.
    cmd.process_group(0);
    cmd.kill_on_drop(false);
    cmd.spawn().map_err(|e| format!("cannot start `{}': {e}", launch.exe))
}

/// Expands `$NAME` and `${NAME}` from the node's environment (unknown names expand to "").
pub fn expand(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        rest = &rest[at + 1..];
        let (name, after) = if let Some(braced) = rest.strip_prefix('{') {
            match braced.find('}') {
                Some(end) => (&braced[..end], &braced[end + 1..]),
                None => {
                    out.push('$');
                    continue;
                }
            }
        } else {
            let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
            (&rest[..end], &rest[end..])
        };
        if name.is_empty() {
            out.push('$');
        } else {
            out.push_str(&std::env::var(name).unwrap_or_default());
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

/// The number of a signal named as IceGrid names them (`SIGTERM`, `TERM`, or a number).
pub fn signal_number(name: &str) -> Option<i32> {
    let upper = name.trim().to_ascii_uppercase();
    let short = upper.strip_prefix("SIG").unwrap_or(&upper);
    let n = match short {
        "HUP" => libc::SIGHUP,
        "INT" => libc::SIGINT,
        "QUIT" => libc::SIGQUIT,
        "ILL" => libc::SIGILL,
        "TRAP" => libc::SIGTRAP,
        "ABRT" => libc::SIGABRT,
        "BUS" => libc::SIGBUS,
        "FPE" => libc::SIGFPE,
        "KILL" => libc::SIGKILL,
        "USR1" => libc::SIGUSR1,
        "SEGV" => libc::SIGSEGV,
        "USR2" => libc::SIGUSR2,
        "PIPE" => libc::SIGPIPE,
        "ALRM" => libc::SIGALRM,
        "TERM" => libc::SIGTERM,
        "CHLD" => libc::SIGCHLD,
        "CONT" => libc::SIGCONT,
        "STOP" => libc::SIGSTOP,
        "TSTP" => libc::SIGTSTP,
        "TTIN" => libc::SIGTTIN,
        "TTOU" => libc::SIGTTOU,
        other => return other.parse::<i32>().ok().filter(|n| (1..=64).contains(n)),
    };
    Some(n)
}

/// Sends signal `signal` to process `pid`.
pub fn send(pid: u32, signal: i32) -> Result<(), String> {
    let Ok(pid) = libc::pid_t::try_from(pid) else { return Err(format!("no process {pid}")) };
    // SAFETY: kill has no memory preconditions; pid > 0 names one process.
    if pid > 0 && unsafe { libc::kill(pid, signal) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error().to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environment_values_are_expanded() {
        std::env::set_var("FLOE_NODE_TEST_VAR", "x");
        assert_eq!(expand("a$FLOE_NODE_TEST_VAR/b"), "ax/b");
        assert_eq!(expand("${FLOE_NODE_TEST_VAR}y"), "xy");
        assert_eq!(expand("$"), "$");
        assert_eq!(expand("${unclosed"), "${unclosed");
        assert_eq!(expand("$FLOE_NODE_UNSET_VAR."), ".");
    }

    #[test]
    fn signals_are_named_as_icegrid_names_them() {
        assert_eq!(signal_number("SIGTERM"), Some(libc::SIGTERM));
        assert_eq!(signal_number("hup"), Some(libc::SIGHUP));
        assert_eq!(signal_number("9"), Some(9));
        assert_eq!(signal_number("SIGNOPE"), None);
        assert_eq!(signal_number("0"), None);
    }
}
