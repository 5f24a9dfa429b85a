//! The connection string of a PostgreSQL store, with TLS as libpq spells it: `sslmode`
//! (`disable`, `allow`, `prefer`, `require`, `verify-ca`, `verify-full`) and `sslrootcert`
//! (a PEM file of the certificates to trust in place of the public web roots), in the
//! `key=value` form or as URL parameters. TLS is rustls's: a certificate is always checked
//! against the trusted roots and the host's name, so `require` and `verify-ca` are as
//! strict as `verify-full` (stricter than libpq, which takes any certificate there).

use std::format;
use std::string::{String, ToString};
use std::sync::Arc;
use std::vec::Vec;

use tokio_postgres::config::SslMode;
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::approvals::StoreError;

/// A parsed connection: the driver's configuration, and the TLS it connects with (`None`:
/// `sslmode=disable`).
pub(crate) struct Connection {
    pub(crate) config: tokio_postgres::Config,
    pub(crate) tls: Option<MakeRustlsConnect>,
}

/// Reads `text`, a libpq connection string.
pub(crate) fn parse(text: &str) -> Result<Connection, StoreError> {
    let (rest, mode, root) = take_tls_settings(text)?;
    let mut config: tokio_postgres::Config = rest
        .parse()
        .map_err(|error| StoreError::Backend(format!("the connection string: {error}")))?;
    let mode = mode.as_deref().unwrap_or("prefer");
    let tls = match mode {
        "disable" => None,
        "allow" | "prefer" => Some(SslMode::Prefer),
        "require" | "verify-ca" | "verify-full" => Some(SslMode::Require),
        other => {
            return Err(StoreError::Backend(format!(
                "the connection string: sslmode `{other}` is not one of disable, allow, prefer, require, verify-ca, verify-full"
            )));
        }
    };
    let Some(ssl_mode) = tls else {
        config.ssl_mode(SslMode::Disable);
        return Ok(Connection { config, tls: None });
    };
    config.ssl_mode(ssl_mode);
    let roots = match root {
        Some(path) => roots_from(&path)?,
        None => rustls::RootCertStore::from_iter(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let client = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|error| StoreError::Backend(format!("TLS: {error}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Connection {
        config,
        tls: Some(MakeRustlsConnect::new(client)),
    })
}

/// The certificates of the PEM file at `path`.
fn roots_from(path: &str) -> Result<rustls::RootCertStore, StoreError> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let unreadable = |error: &dyn core::fmt::Display| {
        StoreError::Backend(format!("sslrootcert {path}: {error}"))
    };
    let certificates: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
        .map_err(|error| unreadable(&error))?
        .collect::<Result<_, _>>()
        .map_err(|error| unreadable(&error))?;
    let mut roots = rustls::RootCertStore::empty();
    let (added, _) = roots.add_parsable_certificates(certificates);
    if added == 0 {
        return Err(unreadable(&"no certificate in the file"));
    }
    Ok(roots)
}

/// `text` without its `sslmode` and `sslrootcert` (which the driver does not read as
/// libpq does), and their values.
#[allow(
    clippy::type_complexity,
    reason = "three parts of one string, named at the call"
)]
fn take_tls_settings(text: &str) -> Result<(String, Option<String>, Option<String>), StoreError> {
    let (mut mode, mut root) = (None, None);
    let mut take = |key: &str, value: &str| match key {
        "sslmode" => {
            mode = Some(value.to_string());
            true
        }
        "sslrootcert" => {
            root = Some(value.to_string());
            true
        }
        _ => false,
    };
    if text.starts_with("postgres://") || text.starts_with("postgresql://") {
        let Some((base, query)) = text.split_once('?') else {
            return Ok((text.to_string(), None, None));
        };
        let kept: Vec<&str> = query
            .split('&')
            .filter(|pair| {
                let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
                !take(key, &unescape(value))
            })
            .collect();
        let rest = if kept.is_empty() {
            base.to_string()
        } else {
            format!("{base}?{}", kept.join("&"))
        };
        return Ok((rest, mode, root));
    }
    let kept: Vec<&str> = text
        .split_whitespace()
        .filter(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            !take(key.trim(), value.trim_matches('\''))
        })
        .collect();
    Ok((kept.join(" "), mode, root))
}

/// A URL parameter's value with its `%XX` escapes read (a path may hold a space).
fn unescape(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| char::from(b).to_digit(16);
        match (
            bytes[i],
            bytes.get(i + 1).copied().and_then(hex),
            bytes.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(high), Some(low)) => {
                out.push(u8::try_from(high * 16 + low).unwrap_or(b'?'));
                i += 3;
            }
            (byte, _, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libpq_tls_settings_are_read_in_both_forms_and_kept_from_the_driver() {
        let (rest, mode, root) =
            take_tls_settings("postgres://gw@db/lanes?sslmode=verify-full&sslrootcert=%2Fetc%2Fca.pem&application_name=x").unwrap();
        assert_eq!(rest, "postgres://gw@db/lanes?application_name=x");
        assert_eq!(mode.as_deref(), Some("verify-full"));
        assert_eq!(root.as_deref(), Some("/etc/ca.pem"));
        let (rest, mode, root) =
            take_tls_settings("host=db sslmode=require sslrootcert='/etc/ca.pem' dbname=lanes")
                .unwrap();
        assert_eq!(rest, "host=db dbname=lanes");
        assert_eq!(
            (mode.as_deref(), root.as_deref()),
            (Some("require"), Some("/etc/ca.pem"))
        );
        assert!(parse("host=db sslmode=sometimes").is_err());
        assert!(parse("host=db sslmode=disable").unwrap().tls.is_none());
        assert!(parse("host=db sslmode=require sslrootcert=/nowhere.pem").is_err());
    }
}
