//! Opening the input named on the command line (a file, or `-`/none = stdin).

use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::Path;

use crate::usage::UsageError;

/// An opened input and the name to print in messages.
pub(crate) struct Input {
    pub(crate) name: String,
    pub(crate) reader: Box<dyn BufRead>,
}

/// Whether `path` names stdin (`None` or `-`).
pub(crate) fn is_stdin(path: Option<&Path>) -> bool {
    path.is_none_or(|p| p.as_os_str() == "-")
}

/// Opens `path` (`None` or `-` = stdin).
pub(crate) fn open(path: Option<&Path>) -> Result<Input, UsageError> {
    match path.filter(|p| !is_stdin(Some(p))) {
        None => Ok(Input {
            name: "<stdin>".to_owned(),
            reader: Box::new(BufReader::with_capacity(64 * 1024, io::stdin())),
        }),
        Some(p) => {
            let name = p.display().to_string();
            let f = File::open(p).map_err(|e| UsageError(format!("cannot open {name}: {e}")))?;
            Ok(Input {
                name,
                reader: Box::new(BufReader::with_capacity(64 * 1024, f)),
            })
        }
    }
}
