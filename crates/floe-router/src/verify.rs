//! `Glacier2.CryptPasswords`: a file of `user hash` lines, where each hash is a crypt(3)
//! string (`$1$` MD5, `$5$` SHA-256, `$6$` SHA-512, or the old 13-character DES form), as
//! `openssl passwd` or `mkpasswd` make them. Checked with the `pwhash` crate.

use std::collections::HashMap;

use floe::Error;

/// The users and password hashes of a `Glacier2.CryptPasswords` file.
#[derive(Debug, Default)]
pub struct CryptPasswords {
    hashes: HashMap<String, String>,
}

impl CryptPasswords {
    /// Reads the file; blank lines and lines starting with `#` are skipped.
    pub fn load(path: &str) -> Result<Self, Error> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::Property {
            name: "Glacier2.CryptPasswords".into(),
            reason: format!("cannot read {path}: {e}"),
        })?;
        Self::parse(&text).map_err(|reason| Error::Property { name: "Glacier2.CryptPasswords".into(), reason })
    }

    /// Parses `user hash` lines.
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
        Ok(CryptPasswords { hashes })
    }

    /// Whether `password` is `user`'s.
    pub fn verify(&self, user: &str, password: &str) -> bool {
        self.hashes.get(user).is_some_and(|hash| pwhash::unix::verify(password, hash))
    }
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
            des abNANd1rDfiNc\n";
        let p = CryptPasswords::parse(file).unwrap();
        for user in ["md5", "sha256", "sha512", "des"] {
            assert!(p.verify(user, "secret"), "{user}");
            assert!(!p.verify(user, "wrong"), "{user}");
        }
        assert!(!p.verify("nobody", "secret"));
        assert!(CryptPasswords::parse("only-a-user\n").is_err());
    }
}
