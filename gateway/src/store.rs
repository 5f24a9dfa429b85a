//! Where the gateway keeps its lanes and tasks: a SQLite file for one process, or a
//! PostgreSQL database that several replicas share. A database's address carries its
//! password, so it is read from the environment, never from the file or the command
//! line, and never written to a log line or an error.

use std::path::PathBuf;

use cairnloop::approvals::StoreError;
use cairnloop::stores::{PostgresStore, SqliteStore};

/// Where the lanes are, as `--store` or `[store] url_env` names it.
///
/// ```
/// use cairnloop_gateway::store::StoreAt;
///
/// let file = StoreAt::parse("/var/lib/cairnloop/lanes.db", |_| None).unwrap();
/// assert_eq!(file.to_string(), "the SQLite file /var/lib/cairnloop/lanes.db");
///
/// let shared = StoreAt::parse("env:LANES_URL", |_| Some("postgres://gw:s3cret@db/lanes".into())).unwrap();
/// assert_eq!(shared.to_string(), "the PostgreSQL database named by $LANES_URL");
/// assert!(!format!("{shared:?}").contains("s3cret"));
/// ```
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreAt {
    /// A SQLite file, made when it is missing.
    File(PathBuf),
    /// A PostgreSQL database: its connection string (secret), and what it is called in
    /// messages.
    Postgres {
        /// The connection string, as libpq spells it (a URL or `key=value` pairs).
        connection: String,
        /// How messages name it (the variable it came from, or "given on the command
        /// line"), never the string itself.
        named: String,
    },
}

impl core::fmt::Debug for StoreAt {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        // The connection string carries the password: only the description is shown.
        write!(f, "StoreAt({self})")
    }
}

impl core::fmt::Display for StoreAt {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::File(path) => write!(f, "the SQLite file {}", path.display()),
            Self::Postgres { named, .. } => write!(f, "the PostgreSQL database {named}"),
        }
    }
}

/// Why the store could not be named or opened. Its text never holds a connection string.
///
/// ```
/// use cairnloop_gateway::store::{StoreAt, StoreProblem};
///
/// let missing = StoreAt::parse("env:NOWHERE", |_| None).unwrap_err();
/// assert_eq!(missing, StoreProblem::Unset("NOWHERE".into()));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StoreProblem {
    /// `env:NAME` names a variable that is not set, or not UTF-8.
    #[error("${0} is not set: it should hold the store's connection string")]
    Unset(String),
    /// A connection string on the command line: it would show in the process list.
    #[error(
        "a PostgreSQL connection string is not taken on the command line (it holds the password and shows in the process list): put it in a variable and pass `--store env:NAME`, or set `[store] url_env`"
    )]
    OnTheCommandLine,
    /// The store could not be opened.
    #[error("cannot open {at}: {error}")]
    Open {
        /// Which store, described.
        at: String,
        /// What the store said.
        error: StoreError,
    },
}

impl StoreAt {
    /// The store `--store` names: `env:NAME` (a variable holding a PostgreSQL connection
    /// string; `read` reads the environment), or a SQLite file's path. A connection
    /// string itself is refused: it would show in the process list.
    ///
    /// # Errors
    ///
    /// [`StoreProblem::Unset`] for an unset variable, [`StoreProblem::OnTheCommandLine`]
    /// for a `postgres://` or `postgresql://` string.
    ///
    /// ```
    /// use cairnloop_gateway::store::{StoreAt, StoreProblem};
    ///
    /// let given = StoreAt::parse("postgres://gw:s3cret@db/lanes", |_| None);
    /// assert_eq!(given, Err(StoreProblem::OnTheCommandLine));
    /// ```
    pub fn parse(
        argument: &str,
        read: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, StoreProblem> {
        if let Some(name) = argument.strip_prefix("env:") {
            return Self::from_env(name, read);
        }
        if argument.starts_with("postgres://") || argument.starts_with("postgresql://") {
            return Err(StoreProblem::OnTheCommandLine);
        }
        Ok(Self::File(argument.into()))
    }

    /// The PostgreSQL database whose connection string the variable `name` holds.
    ///
    /// # Errors
    ///
    /// [`StoreProblem::Unset`] when it is not set.
    ///
    /// ```
    /// use cairnloop_gateway::store::StoreAt;
    ///
    /// let at = StoreAt::from_env("DB", |_| Some("host=db dbname=lanes".into())).unwrap();
    /// assert_eq!(at.to_string(), "the PostgreSQL database named by $DB");
    /// ```
    pub fn from_env(
        name: &str,
        read: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, StoreProblem> {
        let connection = read(name).ok_or_else(|| StoreProblem::Unset(name.into()))?;
        Ok(Self::Postgres {
            connection,
            named: format!("named by ${name}"),
        })
    }

    /// Opens the store (migrating its schema when it is older), off the async runtime:
    /// a PostgreSQL store starts a runtime of its own.
    ///
    /// # Errors
    ///
    /// [`StoreProblem::Open`], with what the store said and never the connection string.
    pub async fn open(&self) -> Result<Opened, StoreProblem> {
        let at = self.clone();
        let opened = tokio::task::spawn_blocking(move || match &at {
            Self::File(path) => SqliteStore::open(path).map(Opened::File),
            Self::Postgres { connection, .. } => {
                PostgresStore::connect(connection).map(Opened::Postgres)
            }
        })
        .await
        .unwrap_or_else(|error| Err(StoreError::Backend(error.to_string())));
        opened.map_err(|error| StoreProblem::Open {
            at: self.to_string(),
            error: self.without_secret(error),
        })
    }

    /// `error` with every copy of the connection string, and of its password, taken out:
    /// a driver's message should never hold them, and is not trusted not to.
    fn without_secret(&self, error: StoreError) -> StoreError {
        let Self::Postgres { connection, .. } = self else {
            return error;
        };
        let text = error.to_string();
        let mut cleaned = text.replace(connection.as_str(), "(the connection string)");
        if let Some(password) = password_of(connection) {
            cleaned = cleaned.replace(&password, "(the password)");
        }
        if cleaned == text {
            error
        } else {
            StoreError::Backend(cleaned)
        }
    }
}

/// The password a connection string carries, in either of libpq's spellings.
fn password_of(connection: &str) -> Option<String> {
    if let Some(rest) = connection
        .strip_prefix("postgres://")
        .or_else(|| connection.strip_prefix("postgresql://"))
    {
        let credentials = rest.split('@').next().filter(|_| rest.contains('@'))?;
        return credentials
            .split_once(':')
            .map(|(_, password)| password.to_owned())
            .filter(|password| !password.is_empty());
    }
    connection.split_whitespace().find_map(|pair| {
        pair.strip_prefix("password=")
            .map(|password| password.trim_matches('\'').to_owned())
            .filter(|password| !password.is_empty())
    })
}

/// An opened store.
#[non_exhaustive]
pub enum Opened {
    /// A SQLite file.
    File(SqliteStore),
    /// A PostgreSQL database.
    Postgres(PostgresStore),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_is_found_in_either_spelling_and_taken_out_of_an_error() {
        assert_eq!(
            password_of("postgres://gw:s3cret@db:5432/lanes").as_deref(),
            Some("s3cret")
        );
        assert_eq!(
            password_of("host=db user=gw password=s3cret dbname=lanes").as_deref(),
            Some("s3cret")
        );
        assert_eq!(password_of("postgres://db/lanes"), None);
        let at = StoreAt::from_env("DB", |_| Some("postgres://gw:s3cret@db/lanes".into())).unwrap();
        let leaked = StoreError::Backend(
            "connecting with postgres://gw:s3cret@db/lanes failed: s3cret".into(),
        );
        let cleaned = at.without_secret(leaked).to_string();
        assert!(!cleaned.contains("s3cret"), "{cleaned}");
    }
}
