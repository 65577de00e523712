//! `cargo xtask release`: prepares a release and stops before publishing.
//!
//! ```text
//! cargo xtask release <MAJOR.MINOR.PATCH[-pre]> [--dry-run] [--offline] [--allow-dirty]
//!                     [--date YYYY-MM-DD] [--workspace DIR]
//! ```
//!
//! Steps, in order (any failure stops the task):
//!
//! 1. The version must be semver `MAJOR.MINOR.PATCH[-pre]` and greater than
//!    the current `[workspace.package] version`.
//! 2. Without `--dry-run` the git tree must be clean (`--allow-dirty` skips
//!    this). With `--dry-run` the workspace is first copied (without
//!    `target/`, `.git/` and `node_modules/`) to
//!    `target/xtask-release/workspace/`, and everything below happens there,
//!    with `target/xtask-release/target/` as the build folder: the real tree
//!    is not touched.
//! 3. Lockstep bump: `[workspace.package] version`, and the `version` of every
//!    inline dependency that also has a `path` (the internal crates in
//!    `[workspace.dependencies]`, and any path dependency in a member
//!    manifest). A member that does not inherit `version.workspace = true`
//!    is an error. `Cargo.lock` is refreshed with `cargo update --workspace`.
//! 4. `CHANGELOG.md`: the notes under `## Unreleased` move under
//!    `## <version> - <date>` (UTC today unless `--date`), and a fresh, empty
//!    `## Unreleased` stays on top. An empty Unreleased section is an error.
//! 5. Every publishable member (`publish` not `false`) is packaged and
//!    verified together, `cargo package -p A -p B ...` (cargo >= 1.90 builds
//!    each `.crate` alone, resolving the other internal crates from a local
//!    registry overlay), then each member with features is checked with
//!    `--no-default-features` and with every feature on its own.
//! 6. The plan is printed: the crates that would be published, in dependency
//!    order, with their version, and the commands that would publish them.
//!    Nothing is published.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::json::Json;
use crate::util::{self, workspace_root};

/// Usage line of the task.
const USAGE: &str = "usage: cargo xtask release <MAJOR.MINOR.PATCH[-pre]> [--dry-run] [--offline] [--allow-dirty] [--date YYYY-MM-DD] [--workspace DIR]";

/// What the command line asked for.
#[derive(Debug)]
struct Options {
    /// The version to release.
    version: Version,
    /// Work on a scratch copy.
    dry_run: bool,
    /// Pass `--offline` to cargo.
    offline: bool,
    /// Accept a dirty git tree (real runs only).
    allow_dirty: bool,
    /// The changelog date.
    date: String,
    /// The workspace to release (this one by default).
    workspace: PathBuf,
}

/// Runs the task with the arguments after `release`.
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let options = parse_args(args)?;
    let (work, target_dir) = prepare_workspace(&options)?;
    let cargo = Cargo {
        dir: work.clone(),
        target_dir,
        offline: options.offline,
    };
    let new = options.version.to_string();
    println!(
        "release {new}{}",
        if options.dry_run {
            format!(" (dry run in {})", work.display())
        } else {
            String::new()
        }
    );
    let members = bump_versions(&work, &cargo, &options.version)?;
    move_changelog(&work, &new, &options.date)?;
    let order = package_and_check(&cargo, &members)?;
    print_plan(&order, &new, options.dry_run.then_some(work.as_path()));
    Ok(())
}

/// Step 2: the workspace to work in, and its build folder: a scratch copy
/// for a dry run, else the real tree, which must be clean.
fn prepare_workspace(options: &Options) -> Result<(PathBuf, Option<PathBuf>), String> {
    let root = &options.workspace;
    if options.dry_run {
        let scratch = root.join("target").join("xtask-release");
        let work = scratch.join("workspace");
        if work.exists() {
            fs::remove_dir_all(&work)
                .map_err(|e| format!("cannot clear {}: {e}", work.display()))?;
        }
        copy_tree(root, &work)?;
        Ok((work, Some(scratch.join("target"))))
    } else {
        if !options.allow_dirty {
            ensure_clean(root)?;
        }
        Ok((root.clone(), None))
    }
}

/// Steps 1 and 3: checks `version` is greater than the current one, then
/// bumps every manifest in lockstep and refreshes `Cargo.lock`. Returns the
/// members (from `cargo metadata` before the bump).
fn bump_versions(work: &Path, cargo: &Cargo, version: &Version) -> Result<Vec<Member>, String> {
    let new = version.to_string();
    let root_manifest = work.join("Cargo.toml");
    let root_text = read(&root_manifest)?;
    let current_text = workspace_package_value(&root_text, "version")
        .ok_or("Cargo.toml: no `version` in [workspace.package]")?;
    let current = Version::parse(&current_text)
        .map_err(|e| format!("Cargo.toml: current version `{current_text}`: {e}"))?;
    if *version <= current {
        return Err(format!(
            "{new} is not greater than the current version {current}"
        ));
    }

    let members = cargo.members()?;
    let (root_bumped, internal) = bump_manifest(&root_text, &new, true);
    write(&root_manifest, &root_bumped)?;
    println!("  Cargo.toml: [workspace.package] version {current} -> {new}");
    println!("  Cargo.toml: {internal} internal dependency version(s) -> {new}");
    for member in &members {
        let text = read(&member.manifest)?;
        if !inherits_version(&text) {
            return Err(format!(
                "{}: `{}` does not use `version.workspace = true`; lockstep releases need it",
                member.manifest.display(),
                member.name
            ));
        }
        let (bumped, count) = bump_manifest(&text, &new, false);
        if count > 0 {
            write(&member.manifest, &bumped)?;
            println!(
                "  {}: {count} path dependency version(s) -> {new}",
                member.name
            );
        }
    }
    cargo.run(&["update", "--workspace"])?;
    Ok(members)
}

/// Step 4: the Unreleased notes move under `## <new> - <date>`.
fn move_changelog(work: &Path, new: &str, date: &str) -> Result<(), String> {
    let changelog = work.join("CHANGELOG.md");
    let (moved, lines) = move_unreleased(&read(&changelog)?, new, date)?;
    write(&changelog, &moved)?;
    println!("  CHANGELOG.md: {lines} line(s) of Unreleased notes moved under `## {new} - {date}`");
    Ok(())
}

/// Step 5: packages every publishable member together, then checks each
/// member with features without its defaults and with each feature alone.
/// Returns the publish order.
fn package_and_check(cargo: &Cargo, members: &[Member]) -> Result<Vec<String>, String> {
    let order = publish_order(members)?;
    if order.is_empty() {
        return Err("no publishable crate (every member has publish = false)".into());
    }
    let mut package = vec!["package".to_owned(), "--allow-dirty".to_owned()];
    for name in &order {
        package.push("-p".into());
        package.push(name.clone());
    }
    cargo.run(&package.iter().map(String::as_str).collect::<Vec<_>>())?;
    println!("  cargo package (verified, in dependency order): ok");
    for name in &order {
        let Some(member) = members.iter().find(|m| &m.name == name) else {
            continue;
        };
        if member.features.is_empty() {
            continue;
        }
        cargo.run(&["check", "-p", name, "--no-default-features"])?;
        for feature in &member.features {
            cargo.run(&[
                "check",
                "-p",
                name,
                "--no-default-features",
                "--features",
                feature,
            ])?;
        }
        println!(
            "  {name}: builds with no default features and with each of: {}",
            member.features.join(", ")
        );
    }
    Ok(order)
}

/// Step 6: what would be published, and how (`dry_run`: the prepared copy).
fn print_plan(order: &[String], new: &str, dry_run: Option<&Path>) {
    println!("would publish, in order:");
    for (i, name) in order.iter().enumerate() {
        println!("  {}. {name} {new}", i + 1);
    }
    println!("stopped before publishing; to publish, in this order:");
    for name in order {
        println!("  cargo publish -p {name}");
    }
    match dry_run {
        Some(work) => println!(
            "(dry run: the real tree is unchanged; the prepared copy is {})",
            work.display()
        ),
        None => println!("then tag: git commit -am 'Release {new}' && git tag v{new}"),
    }
}

/// Parses the arguments after `release`.
fn parse_args(args: &[String]) -> Result<Options, String> {
    let mut version = None;
    let mut dry_run = false;
    let mut offline = false;
    let mut allow_dirty = false;
    let mut date = None;
    let mut workspace = None;
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        match arg.as_str() {
            "--dry-run" => dry_run = true,
            "--offline" => offline = true,
            "--allow-dirty" => allow_dirty = true,
            "--date" => {
                let d = iter.next().ok_or("--date needs YYYY-MM-DD")?;
                if !is_date(d) {
                    return Err(format!("--date: `{d}` is not YYYY-MM-DD"));
                }
                date = Some(d.clone());
            }
            "--workspace" => {
                workspace = Some(PathBuf::from(
                    iter.next().ok_or("--workspace needs a folder")?,
                ))
            }
            "-h" | "--help" => return Err(USAGE.to_owned()),
            other if other.starts_with('-') => {
                return Err(format!("release: unknown option `{other}`\n{USAGE}"));
            }
            other if version.is_none() => {
                version =
                    Some(Version::parse(other).map_err(|e| format!("version `{other}`: {e}"))?)
            }
            other => return Err(format!("release: unexpected argument `{other}`\n{USAGE}")),
        }
    }
    let version = version.ok_or_else(|| format!("release: a version is required\n{USAGE}"))?;
    let workspace = match workspace {
        Some(dir) => {
            fs::canonicalize(&dir).map_err(|e| format!("--workspace {}: {e}", dir.display()))?
        }
        None => workspace_root(),
    };
    Ok(Options {
        version,
        dry_run,
        offline,
        allow_dirty,
        date: date.unwrap_or_else(today_utc),
        workspace,
    })
}

// ------------------------------------------------------------------ semver

/// A semver version without build metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Version {
    /// MAJOR.MINOR.PATCH.
    core: [u64; 3],
    /// Pre-release identifiers (empty for a release).
    pre: Vec<String>,
}

impl Version {
    /// Parses `MAJOR.MINOR.PATCH[-pre]`.
    pub(crate) fn parse(text: &str) -> Result<Version, String> {
        let (core_text, pre_text) = match text.split_once('-') {
            Some((core, pre)) => (core, Some(pre)),
            None => (text, None),
        };
        let numeric = |part: &str, what: &str| -> Result<u64, String> {
            if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
                return Err(format!(
                    "{what} `{part}` is not a number (expected MAJOR.MINOR.PATCH[-pre])"
                ));
            }
            if part.len() > 1 && part.starts_with('0') {
                return Err(format!("{what} `{part}` has a leading zero"));
            }
            part.parse()
                .map_err(|_| format!("{what} `{part}` is too large"))
        };
        let parts: Vec<&str> = core_text.split('.').collect();
        if parts.len() != 3 {
            return Err("expected MAJOR.MINOR.PATCH[-pre]".into());
        }
        let core = [
            numeric(parts[0], "major")?,
            numeric(parts[1], "minor")?,
            numeric(parts[2], "patch")?,
        ];
        let mut pre = Vec::new();
        if let Some(pre_text) = pre_text {
            for ident in pre_text.split('.') {
                if ident.is_empty()
                    || !ident
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-')
                {
                    return Err(format!(
                        "pre-release identifier `{ident}` must be [0-9A-Za-z-]+"
                    ));
                }
                if ident.bytes().all(|b| b.is_ascii_digit()) {
                    numeric(ident, "numeric pre-release identifier")?;
                }
                pre.push(ident.to_owned());
            }
        }
        Ok(Version { core, pre })
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.core[0], self.core[1], self.core[2])?;
        if !self.pre.is_empty() {
            write!(f, "-{}", self.pre.join("."))?;
        }
        Ok(())
    }
}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Version {
    /// Semver precedence: core, then a release above its pre-releases, then
    /// identifiers left to right (numeric below alphanumeric).
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        use std::cmp::Ordering;
        self.core
            .cmp(&other.core)
            .then_with(|| match (self.pre.is_empty(), other.pre.is_empty()) {
                (true, true) => Ordering::Equal,
                (true, false) => Ordering::Greater,
                (false, true) => Ordering::Less,
                (false, false) => {
                    for (a, b) in self.pre.iter().zip(&other.pre) {
                        let order = match (a.parse::<u64>(), b.parse::<u64>()) {
                            (Ok(x), Ok(y)) => x.cmp(&y),
                            (Ok(_), Err(_)) => Ordering::Less,
                            (Err(_), Ok(_)) => Ordering::Greater,
                            (Err(_), Err(_)) => a.cmp(b),
                        };
                        if order != Ordering::Equal {
                            return order;
                        }
                    }
                    self.pre.len().cmp(&other.pre.len())
                }
            })
    }
}

// --------------------------------------------------------------- manifests

/// The lines of a manifest, trimmed, each with the header of its section
/// (`""` before the first); the headers themselves are left out.
fn lines_by_section(manifest: &str) -> impl Iterator<Item = (&str, &str)> {
    let mut section = "";
    manifest.lines().filter_map(move |line| {
        let t = line.trim();
        if t.starts_with('[') {
            section = t;
            None
        } else {
            Some((section, t))
        }
    })
}

/// The value of a `key = "value"` line in `[workspace.package]`.
pub(crate) fn workspace_package_value(manifest: &str, key: &str) -> Option<String> {
    lines_by_section(manifest)
        .filter(|(section, _)| *section == "[workspace.package]")
        .find_map(|(_, t)| {
            let (k, v) = t.split_once('=')?;
            (k.trim() == key).then(|| v.trim().trim_matches('"').to_owned())
        })
}

/// True when the `[package]` section inherits `key` from the workspace
/// (`key.workspace = true` or `key = { workspace = true }`).
pub(crate) fn package_inherits(manifest: &str, key: &str) -> bool {
    let dotted = format!("{key}.workspace=true");
    let table = format!("{key}={{workspace=true}}");
    lines_by_section(manifest).any(|(section, t)| {
        let compact: String = t.chars().filter(|c| !c.is_whitespace()).collect();
        section == "[package]" && (compact == dotted || compact == table)
    })
}

/// True when the `[package]` section inherits the workspace version.
fn inherits_version(manifest: &str) -> bool {
    package_inherits(manifest, "version")
}

/// Bumps the versions of a manifest: `[workspace.package] version` when
/// `workspace` is true, and the `version` of every inline table that also has
/// a `path`. Returns the new text and how many dependency versions changed.
fn bump_manifest(manifest: &str, new: &str, workspace: bool) -> (String, usize) {
    let mut out = String::with_capacity(manifest.len());
    let mut section = String::new();
    let mut count = 0;
    for line in manifest.split_inclusive('\n') {
        let t = line.trim();
        if t.starts_with('[') {
            section = t.to_owned();
            out.push_str(line);
            continue;
        }
        if workspace && section == "[workspace.package]" {
            if let Some((k, _)) = line.split_once('=') {
                if k.trim() == "version" {
                    let ending = if line.ends_with('\n') { "\n" } else { "" };
                    out.push_str(&format!("{k}= \"{new}\"{ending}"));
                    continue;
                }
            }
        }
        if !t.starts_with('#') && t.contains("path") {
            if let Some(bumped) = replace_inline_version(line, new) {
                count += 1;
                out.push_str(&bumped);
                continue;
            }
        }
        out.push_str(line);
    }
    (out, count)
}

/// In `name = { path = "...", version = "x" }`, replaces `x` with `new`.
/// `None` when the line has no `path` key or no `version` key in an inline
/// table.
fn replace_inline_version(line: &str, new: &str) -> Option<String> {
    let open = line.find('{')?;
    let has_key = |key: &str| find_key(&line[open..], key).is_some();
    if !has_key("path") {
        return None;
    }
    let at = open + find_key(&line[open..], "version")?;
    let quote = at + line[at..].find('"')?;
    let end = quote + 1 + line[quote + 1..].find('"')?;
    Some(format!("{}{new}{}", &line[..=quote], &line[end..]))
}

/// Position just after `key` followed by `=` as a key of an inline table
/// (preceded by `{` or `,` and spaces).
fn find_key(table: &str, key: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(pos) = table[from..].find(key) {
        let start = from + pos;
        let before = table[..start].trim_end();
        let after = table[start + key.len()..].trim_start();
        if (before.ends_with('{') || before.ends_with(',')) && after.starts_with('=') {
            return Some(start + key.len());
        }
        from = start + key.len();
    }
    None
}

/// Moves the notes under `## Unreleased` (or `## [Unreleased]`) under
/// `## <version> - <date>`. Returns the new text and the number of moved
/// lines.
fn move_unreleased(changelog: &str, version: &str, date: &str) -> Result<(String, usize), String> {
    let lines: Vec<&str> = changelog.lines().collect();
    let is_heading = |l: &str| l.starts_with("## ");
    let unreleased = lines
        .iter()
        .position(|l| {
            let title = l.trim().to_ascii_lowercase();
            title == "## unreleased" || title == "## [unreleased]"
        })
        .ok_or("CHANGELOG.md: no `## Unreleased` section")?;
    if lines.iter().any(|l| {
        l.strip_prefix("## ").is_some_and(|t| {
            let t = t.trim_start_matches('[');
            t.starts_with(version) && t[version.len()..].starts_with([']', ' ']) || t == version
        })
    }) {
        return Err(format!("CHANGELOG.md already has a section for {version}"));
    }
    let end = lines[unreleased + 1..]
        .iter()
        .position(|l| is_heading(l))
        .map_or(lines.len(), |p| unreleased + 1 + p);
    let mut body = &lines[unreleased + 1..end];
    while body.first().is_some_and(|l| l.trim().is_empty()) {
        body = &body[1..];
    }
    while body.last().is_some_and(|l| l.trim().is_empty()) {
        body = &body[..body.len() - 1];
    }
    if body.is_empty() {
        return Err("CHANGELOG.md: the Unreleased section is empty; nothing to release".into());
    }
    let mut out = String::with_capacity(changelog.len() + 64);
    for line in &lines[..=unreleased] {
        out.push_str(line);
        out.push('\n');
    }
    out.push('\n');
    out.push_str(&format!("## {version} - {date}\n\n"));
    for line in body {
        out.push_str(line);
        out.push('\n');
    }
    for line in &lines[end..] {
        if out.ends_with("\n") && !out.ends_with("\n\n") && is_heading(line) {
            out.push('\n');
        }
        out.push_str(line);
        out.push('\n');
    }
    Ok((out, body.len()))
}

// ------------------------------------------------------------------- cargo

/// A workspace member, from `cargo metadata`.
#[derive(Debug)]
struct Member {
    /// Package name.
    name: String,
    /// `Cargo.toml` path.
    manifest: PathBuf,
    /// `publish` is not `false`.
    publishable: bool,
    /// Features other than `default`.
    features: Vec<String>,
    /// Names of normal and build dependencies.
    dependencies: Vec<String>,
}

/// Runs cargo in one folder.
struct Cargo {
    /// The workspace folder.
    dir: PathBuf,
    /// `CARGO_TARGET_DIR`, when set.
    target_dir: Option<PathBuf>,
    /// Pass `--offline`.
    offline: bool,
}

impl Cargo {
    /// A cargo command with the folder, target and offline flag applied.
    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
        cmd.current_dir(&self.dir).args(args);
        if self.offline {
            cmd.arg("--offline");
        }
        if let Some(target) = &self.target_dir {
            cmd.env("CARGO_TARGET_DIR", target);
        }
        cmd
    }

    /// Runs cargo, output to the terminal.
    fn run(&self, args: &[&str]) -> Result<(), String> {
        let status = self
            .command(args)
            .status()
            .map_err(|e| format!("cannot run cargo: {e}"))?;
        if status.success() {
            Ok(())
        } else {
            Err(format!("`cargo {}` failed ({status})", args.join(" ")))
        }
    }

    /// The workspace members.
    fn members(&self) -> Result<Vec<Member>, String> {
        let mut cmd = self.command(&["metadata", "--format-version", "1", "--no-deps"]);
        let stdout = util::cargo_metadata(&mut cmd)?;
        let text = String::from_utf8(stdout).map_err(|_| "cargo metadata: not UTF-8")?;
        parse_members(&text)
    }
}

/// Reads the members out of `cargo metadata --no-deps` JSON.
fn parse_members(text: &str) -> Result<Vec<Member>, String> {
    let metadata = Json::parse(text)?;
    let packages = metadata
        .get("packages")
        .and_then(Json::as_array)
        .ok_or("cargo metadata: no packages")?;
    let mut members = Vec::new();
    for package in packages {
        let field = |key: &str| package.get(key).and_then(Json::as_str).map(str::to_owned);
        let name = field("name").ok_or("cargo metadata: a package without a name")?;
        let manifest =
            PathBuf::from(field("manifest_path").ok_or("cargo metadata: no manifest_path")?);
        let publishable = !matches!(package.get("publish"), Some(Json::Array(registries)) if registries.is_empty());
        let features = package
            .get("features")
            .and_then(Json::as_object)
            .map(|f| {
                f.iter()
                    .map(|(k, _)| k.clone())
                    .filter(|k| k != "default")
                    .collect()
            })
            .unwrap_or_default();
        let dependencies = package
            .get("dependencies")
            .and_then(Json::as_array)
            .unwrap_or_default()
            .iter()
            .filter(|d| !matches!(d.get("kind").and_then(Json::as_str), Some("dev")))
            .filter_map(|d| d.get("name").and_then(Json::as_str).map(str::to_owned))
            .collect();
        members.push(Member {
            name,
            manifest,
            publishable,
            features,
            dependencies,
        });
    }
    Ok(members)
}

/// The publishable members, dependencies first (ties by name).
fn publish_order(members: &[Member]) -> Result<Vec<String>, String> {
    let publishable: Vec<&Member> = members.iter().filter(|m| m.publishable).collect();
    for m in &publishable {
        for dep in &m.dependencies {
            if members.iter().any(|o| &o.name == dep && !o.publishable) {
                return Err(format!(
                    "{} depends on {dep}, which has publish = false",
                    m.name
                ));
            }
        }
    }
    let mut order: Vec<String> = Vec::new();
    while order.len() < publishable.len() {
        let mut ready: Vec<&str> = publishable
            .iter()
            .filter(|m| !order.contains(&m.name))
            .filter(|m| {
                m.dependencies
                    .iter()
                    .all(|d| order.contains(d) || !publishable.iter().any(|o| &o.name == d))
            })
            .map(|m| m.name.as_str())
            .collect();
        if ready.is_empty() {
            return Err("the internal crates depend on each other in a cycle".into());
        }
        ready.sort_unstable();
        order.push(ready[0].to_owned());
    }
    Ok(order)
}

// -------------------------------------------------------------------- files

/// Reads a file to a string.
fn read(path: &Path) -> Result<String, String> {
    fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

/// Writes a string to a file.
fn write(path: &Path, text: &str) -> Result<(), String> {
    fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Copies a workspace, leaving out build output, VCS data and npm folders.
fn copy_tree(from: &Path, to: &Path) -> Result<(), String> {
    fs::create_dir_all(to).map_err(|e| format!("cannot create {}: {e}", to.display()))?;
    let entries = fs::read_dir(from).map_err(|e| format!("cannot list {}: {e}", from.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot list {}: {e}", from.display()))?;
        let name = entry.file_name();
        if name == "target" || name == ".git" || name == "node_modules" {
            continue;
        }
        let source = entry.path();
        let dest = to.join(&name);
        let kind = entry
            .file_type()
            .map_err(|e| format!("{}: {e}", source.display()))?;
        if kind.is_dir() {
            copy_tree(&source, &dest)?;
        } else if kind.is_symlink() {
            let link = fs::read_link(&source).map_err(|e| format!("{}: {e}", source.display()))?;
            symlink(&link, &dest)?;
        } else {
            fs::copy(&source, &dest)
                .map_err(|e| format!("cannot copy {}: {e}", source.display()))?;
        }
    }
    Ok(())
}

/// Recreates a symbolic link.
#[cfg(unix)]
fn symlink(link: &Path, dest: &Path) -> Result<(), String> {
    std::os::unix::fs::symlink(link, dest)
        .map_err(|e| format!("cannot link {}: {e}", dest.display()))
}

/// Copies what a symbolic link points to (non-Unix hosts).
#[cfg(not(unix))]
fn symlink(link: &Path, dest: &Path) -> Result<(), String> {
    fs::copy(link, dest)
        .map(|_| ())
        .map_err(|e| format!("cannot copy {}: {e}", dest.display()))
}

/// Fails unless `git status --porcelain` is empty.
fn ensure_clean(root: &Path) -> Result<(), String> {
    let output = Command::new("git")
        .current_dir(root)
        .args(["status", "--porcelain"])
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    if !output.status.success() {
        return Err("git status failed (is this a git checkout?)".into());
    }
    if !output.stdout.is_empty() {
        return Err("the working tree has uncommitted changes; commit them, or use --dry-run or --allow-dirty".into());
    }
    Ok(())
}

/// True for `YYYY-MM-DD`.
fn is_date(text: &str) -> bool {
    let b = text.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
}

/// Today's date in UTC, `YYYY-MM-DD`.
fn today_utc() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (y, m, d) = crate::corpus::civil_from_days((secs / 86_400) as i64);
    format!("{y:04}-{m:02}-{d:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn semver() {
        for ok in [
            "0.1.0",
            "1.2.3",
            "10.20.30",
            "1.0.0-rc.1",
            "1.0.0-alpha-1.0a",
            "0.0.0-0",
        ] {
            assert_eq!(Version::parse(ok).unwrap().to_string(), ok);
        }
        for bad in [
            "1",
            "1.2",
            "1.2.3.4",
            "01.2.3",
            "1.2.3-",
            "1.2.3-01",
            "1.2.3+build",
            "v1.2.3",
            "1.2.x",
            "",
        ] {
            assert!(Version::parse(bad).is_err(), "{bad}");
        }
        let v = |s| Version::parse(s).unwrap();
        assert!(v("1.0.0-alpha") < v("1.0.0-alpha.1"));
        assert!(v("1.0.0-alpha.1") < v("1.0.0-alpha.beta"));
        assert!(v("1.0.0-beta.2") < v("1.0.0-beta.11"));
        assert!(v("1.0.0-rc.1") < v("1.0.0"));
        assert!(v("0.1.0") < v("0.2.0") && v("0.9.9") < v("1.0.0"));
    }

    #[test]
    fn bumps_workspace_and_internal_versions_only() {
        let manifest = "[workspace.package]\nversion = \"0.1.0\"\nrust-version = \"1.85\"\n\n[workspace.dependencies]\na = { path = \"crates/a\", version = \"0.1.0\" }\nserde = { version = \"1.0.0\", features = [\"derive\"] }\n# b = { path = \"x\", version = \"0.1.0\" }\n";
        let (out, n) = bump_manifest(manifest, "0.2.0", true);
        assert_eq!(n, 1);
        // The workspace version and the path dependency's; not serde's, not
        // a comment.
        assert_eq!(
            out,
            "[workspace.package]\nversion = \"0.2.0\"\nrust-version = \"1.85\"\n\n[workspace.dependencies]\na = { path = \"crates/a\", version = \"0.2.0\" }\nserde = { version = \"1.0.0\", features = [\"derive\"] }\n# b = { path = \"x\", version = \"0.1.0\" }\n"
        );
        assert_eq!(
            workspace_package_value(&out, "version").as_deref(),
            Some("0.2.0")
        );
    }

    #[test]
    fn changelog_move() {
        let text = "# Changelog\n\n## Unreleased\n\n### Added\n\n- a thing\n\n## 0.0.1 - 2026-01-01\n\n- old\n";
        let (out, n) = move_unreleased(text, "0.1.0", "2026-08-17").unwrap();
        assert_eq!(n, 3);
        assert_eq!(
            out,
            "# Changelog\n\n## Unreleased\n\n## 0.1.0 - 2026-08-17\n\n### Added\n\n- a thing\n\n## 0.0.1 - 2026-01-01\n\n- old\n"
        );
        assert!(
            move_unreleased(&out, "0.1.1", "2026-08-18").is_err(),
            "empty Unreleased"
        );
        assert!(
            move_unreleased(text, "0.0.1", "2026-08-18").is_err(),
            "version exists"
        );
    }
}
