//! Crypt(3) password files (`Glacier2.CryptPasswords`, `IceGrid.Registry.CryptPasswords`):
//! `user hash` lines, where each hash is a crypt(3) string (`$1$` MD5, `$5$` SHA-256, `$6$`
//! SHA-512, `$2y$` bcrypt, or the old 13-character DES form) as `openssl passwd` or `mkpasswd`
//! make them. A check hashes on tokio's blocking threads, never on the runtime's own, so that
//! a costly hash holds up nothing else; a malformed hash denies, it never panics.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use floe::Error;
use tokio::sync::Semaphore;

/// Why a password could not be checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CryptError {
    /// The user is not in the file.
    UnknownUser,
    /// The password does not match the user's hash.
    WrongPassword,
    /// The user's hash is malformed.
    BadHash,
    /// The check could not run (the runtime is shutting down).
    Unavailable,
}

impl std::fmt::Display for CryptError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            CryptError::UnknownUser => "unknown user id",
            CryptError::WrongPassword => "wrong password",
            CryptError::BadHash => "malformed password hash",
            CryptError::Unavailable => "the password check could not run",
        })
    }
}

impl std::error::Error for CryptError {}

/// The users and password hashes of a crypt password file.
#[derive(Debug, Clone, Default)]
pub struct CryptPasswords {
    hashes: Arc<HashMap<String, String>>,
}

/// Hashes running at once at most: one per CPU, so that a flood of logins does not take
/// every blocking thread.
fn permits() -> &'static Arc<Semaphore> {
    static PERMITS: OnceLock<Arc<Semaphore>> = OnceLock::new();
    PERMITS.get_or_init(|| Arc::new(Semaphore::new(std::thread::available_parallelism().map_or(2, |n| n.get()).max(1))))
}

impl CryptPasswords {
    /// Reads the file named by property `property`; a property error when it cannot be read
    /// or has a malformed line.
    pub fn load(path: &Path, property: &str) -> Result<Self, Error> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::Property {
            name: property.into(),
            reason: format!("cannot read {}: {e}", path.display()),
        })?;
        Self::parse(&text).map_err(|reason| Error::Property { name: property.into(), reason })
    }

    /// Parses `user hash` lines; blank lines and lines starting with `#` are skipped.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut hashes = HashMap::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let mut parts = line.split_whitespace();
            let (Some(user), Some(hash), None) = (parts.next(), parts.next(), parts.next()) else {
                return Err(format!("line {}: expected `user hash`", n + 1));
            };
            hashes.insert(user.to_string(), hash.to_string());
        }
        Ok(CryptPasswords { hashes: Arc::new(hashes) })
    }

    /// Checks `user`'s `password` on a blocking thread; `Ok` when it matches. Must be
    /// called inside a tokio runtime.
    /// A password longer than [`PASSWORD_LEN_MAX`] bytes is refused unhashed: SHA-crypt's
    /// work grows with the password's length, and a client could otherwise hold the hashing
    /// threads with megabyte passwords.
    pub async fn verify(&self, user: &str, password: &str) -> Result<(), CryptError> {
        let Some(hash) = self.hashes.get(user).cloned() else {
            return Err(CryptError::UnknownUser);
        };
        if password.len() > PASSWORD_LEN_MAX {
            return Err(CryptError::WrongPassword);
        }
        let Ok(_permit) = permits().acquire().await else {
            return Err(CryptError::Unavailable);
        };
        let password = password.to_string();
        match tokio::task::spawn_blocking(move || verify_hash(&password, &hash)).await {
            Ok(Ok(true)) => Ok(()),
            Ok(Ok(false)) => Err(CryptError::WrongPassword),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(CryptError::Unavailable),
        }
    }
}

/// The longest password [`CryptPasswords::verify`] hashes, in bytes.
pub const PASSWORD_LEN_MAX: usize = 1024;

/// Whether `password` matches the crypt(3) `hash`, on the calling thread (it may take long:
/// see [`CryptPasswords::verify`]); `BadHash` when the hash is malformed.
pub fn verify_hash(password: &str, hash: &str) -> Result<bool, CryptError> {
    if hash.is_empty() {
        return Err(CryptError::BadHash);
    }
    std::panic::catch_unwind(|| pwhash::unix::verify(password, hash)).map_err(|_| CryptError::BadHash)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_crypt_form_verifies() {
        // Made with `openssl passwd -1 / -5 / -6 -salt saltsalt secret`, and Python's
        // `crypt.crypt("secret", "ab")` for DES.
        let file = "# users\n\
            md5 $1$saltsalt$9xy1btjgzLYfb7hivXtC//\n\
            sha256 $5$saltsalt$0IyaXrmV7.sGNS6tirgqHLqX/G.FBvgkYA.lpPdS5sA\n\
            sha512 $6$saltsalt$TVLlQcbpFVof5W3Yz4DTP6gRstiNuHwwTt6GLc1E5n0U0aDehy0S5knV8wiOQSpT0Y77vwPZN.Pq.H91p5hVO1\n\
            des abNANd1rDfiNc\n\
            broken $6$rounds=9999999999999$x$y\n";
        let p = CryptPasswords::parse(file).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            for user in ["md5", "sha256", "sha512", "des"] {
                assert_eq!(p.verify(user, "secret").await, Ok(()), "{user}");
                assert_eq!(p.verify(user, "wrong").await, Err(CryptError::WrongPassword), "{user}");
            }
            assert_eq!(p.verify("nobody", "secret").await, Err(CryptError::UnknownUser));
            let long = "s".repeat(PASSWORD_LEN_MAX + 1);
            assert_eq!(p.verify("sha512", &long).await, Err(CryptError::WrongPassword), "too long");
            assert!(p.verify("broken", "secret").await.is_err());
        });
        assert!(CryptPasswords::parse("only-a-user\n").is_err());
        assert!(CryptPasswords::parse("a b c\n").is_err());
    }

    #[test]
    fn malformed_hashes_never_match() {
        for bad in ["", "$6$", "$1$abcdefgh$", "$6$rounds=9999999999999$x$y", "$2y$99$x"] {
            assert_ne!(verify_hash("secret", bad), Ok(true), "{bad}");
        }
        // openssl passwd -6 -salt abcdefgh secret
        let h6 = "$6$abcdefgh$ltjgWl6579NluT/Vi1nwEvcil.G5Nbc4NiXZaNGStk8PSwGfQv72N2CKPPrVACtLtip/cZ/1GM/O6IND4WQhG.";
        assert_eq!(verify_hash("secret", h6), Ok(true));
        assert_eq!(verify_hash("Secret", h6), Ok(false));
    }
}
