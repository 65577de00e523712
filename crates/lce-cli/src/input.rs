//! Opening the input named on the command line (a file, or `-`/none = stdin).

use std::fs::File;
use std::io::{self, BufRead, BufReader};

use crate::UsageError;

/// An opened input and the name to print in messages.
pub(crate) struct Input {
    pub(crate) name: String,
    pub(crate) reader: Box<dyn BufRead>,
}

/// Opens `path` (`None` or `-` = stdin).
pub(crate) fn open(path: Option<&str>) -> Result<Input, UsageError> {
    match path {
        None | Some("-") => Ok(Input {
            name: "<stdin>".to_owned(),
            reader: Box::new(BufReader::with_capacity(64 * 1024, io::stdin())),
        }),
        Some(p) => {
            let f = File::open(p).map_err(|e| UsageError(format!("cannot open {p}: {e}")))?;
            Ok(Input {
                name: p.to_owned(),
                reader: Box::new(BufReader::with_capacity(64 * 1024, f)),
            })
        }
    }
}
