//! `cargo xtask release`: prepares a release and stops before publishing.
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
//! 3. Lockstep bump (`toml_edit`, layout and comments kept):
//!    `[workspace.package] version`, and the `version` of every dependency
//!    that also has a `path`, inline or as a table (the internal crates in
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

use cargo_metadata::{DependencyKind, MetadataCommand};
use semver::Version;
use toml_edit::{DocumentMut, Item, TableLike};

use crate::util::{create_dir, read, workspace_root, write};

/// What the command line asked for.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The version to release: `MAJOR.MINOR.PATCH[-pre]`, greater than the
    /// current one.
    #[arg(value_name = "MAJOR.MINOR.PATCH[-pre]", value_parser = parse_version)]
    version: Version,
    /// Work on a scratch copy under `target/xtask-release/`.
    #[arg(long)]
    dry_run: bool,
    /// Pass `--offline` to cargo.
    #[arg(long)]
    offline: bool,
    /// Accept a dirty git tree (real runs only).
    #[arg(long)]
    allow_dirty: bool,
    /// The changelog date (UTC today by default).
    #[arg(long, value_name = "YYYY-MM-DD", value_parser = parse_date)]
    date: Option<String>,
    /// The workspace to release (this one by default).
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
}

/// Runs the task with the arguments after `release`.
pub(crate) fn run(args: Args) -> Result<(), String> {
    let workspace = match &args.workspace {
        Some(dir) => {
            fs::canonicalize(dir).map_err(|e| format!("--workspace {}: {e}", dir.display()))?
        }
        None => workspace_root(),
    };
    let (work, target_dir) = prepare_workspace(&workspace, &args)?;
    let cargo = Cargo {
        dir: work.clone(),
        target_dir,
        offline: args.offline,
    };
    let new = args.version.to_string();
    println!(
        "release {new}{}",
        if args.dry_run {
            format!(" (dry run in {})", work.display())
        } else {
            String::new()
        }
    );
    let members = bump_versions(&work, &cargo, &args.version)?;
    let date = args.date.unwrap_or_else(today_utc);
    move_changelog(&work, &new, &date)?;
    let order = package_and_check(&cargo, &members)?;
    print_plan(&order, &new, args.dry_run.then_some(work.as_path()));
    Ok(())
}

/// Step 2: the workspace to work in, and its build folder: a scratch copy
/// of `root` for a dry run, else the real tree, which must be clean.
fn prepare_workspace(root: &Path, args: &Args) -> Result<(PathBuf, Option<PathBuf>), String> {
    if args.dry_run {
        let scratch = root.join("target").join("xtask-release");
        let work = scratch.join("workspace");
        if work.exists() {
            fs::remove_dir_all(&work)
                .map_err(|e| format!("cannot clear {}: {e}", work.display()))?;
        }
        copy_tree(root, &work)?;
        Ok((work, Some(scratch.join("target"))))
    } else {
        if !args.allow_dirty {
            ensure_clean(root)?;
        }
        Ok((root.to_owned(), None))
    }
}

/// Steps 1 and 3: checks `version` is greater than the current one, then
/// bumps every manifest in lockstep and refreshes `Cargo.lock`. Returns the
/// members (from `cargo metadata` before the bump).
fn bump_versions(work: &Path, cargo: &Cargo, version: &Version) -> Result<Vec<Member>, String> {
    let new = version.to_string();
    let root_manifest = work.join("Cargo.toml");
    let mut root = read_manifest(&root_manifest)?;
    let current_text = workspace_package_value(&root, "version")
        .ok_or("Cargo.toml: no `version` in [workspace.package]")?;
    let current = parse_version(&current_text)
        .map_err(|e| format!("Cargo.toml: current version `{current_text}`: {e}"))?;
    if *version <= current {
        return Err(format!(
            "{new} is not greater than the current version {current}"
        ));
    }

    let members = cargo.members()?;
    let internal = bump_manifest(&mut root, &new, true);
    write(&root_manifest, root.to_string())?;
    println!("  Cargo.toml: [workspace.package] version {current} -> {new}");
    println!("  Cargo.toml: {internal} internal dependency version(s) -> {new}");
    for member in &members {
        let mut manifest = read_manifest(&member.manifest)?;
        if !package_inherits(&manifest, "version") {
            return Err(format!(
                "{}: `{}` does not use `version.workspace = true`; lockstep releases need it",
                member.manifest.display(),
                member.name
            ));
        }
        let count = bump_manifest(&mut manifest, &new, false);
        if count > 0 {
            write(&member.manifest, manifest.to_string())?;
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

/// A version to release: semver `MAJOR.MINOR.PATCH[-pre]`, without build
/// metadata (crates.io ignores it, so it cannot tell two releases apart).
fn parse_version(text: &str) -> Result<Version, String> {
    let version = Version::parse(text).map_err(|e| format!("`{text}`: {e}"))?;
    if !version.build.is_empty() {
        return Err(format!("`{text}`: build metadata (`+...`) is not allowed"));
    }
    Ok(version)
}

// --------------------------------------------------------------- manifests

/// Reads and parses a manifest, keeping its layout and comments.
fn read_manifest(path: &Path) -> Result<DocumentMut, String> {
    read(path)?
        .parse()
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// The string value of `key` in `[workspace.package]`.
pub(crate) fn workspace_package_value(manifest: &DocumentMut, key: &str) -> Option<String> {
    let value = manifest.get("workspace")?.get("package")?.get(key)?;
    value.as_str().map(str::to_owned)
}

/// True when the `[package]` section inherits `key` from the workspace
/// (`key.workspace = true` or `key = { workspace = true }`).
pub(crate) fn package_inherits(manifest: &DocumentMut, key: &str) -> bool {
    let inherited = manifest
        .get("package")
        .and_then(|p| p.get(key))
        .and_then(|k| k.get("workspace"));
    inherited.and_then(Item::as_bool) == Some(true)
}

/// Bumps the versions of a manifest: `[workspace.package] version` when
/// `workspace` is true, and the `version` of every table that also has a
/// `path` (the internal dependencies, in any section). Returns how many
/// dependency versions changed.
fn bump_manifest(manifest: &mut DocumentMut, new: &str, workspace: bool) -> usize {
    if workspace {
        let version = manifest
            .get_mut("workspace")
            .and_then(|w| w.get_mut("package"))
            .and_then(|p| p.get_mut("version"));
        if let Some(version) = version.and_then(Item::as_value_mut) {
            set_string(version, new);
        }
    }
    bump_path_versions(manifest.as_table_mut(), new)
}

/// [`bump_manifest`]'s walk over the tables under `table`.
fn bump_path_versions(table: &mut dyn TableLike, new: &str) -> usize {
    let mut count = 0;
    if table.contains_key("path") {
        let version = table.get_mut("version").and_then(Item::as_value_mut);
        if let Some(version) = version.filter(|v| v.is_str()) {
            set_string(version, new);
            count += 1;
        }
    }
    for (_, item) in table.iter_mut() {
        if let Some(inner) = item.as_table_like_mut() {
            count += bump_path_versions(inner, new);
        } else if let Some(tables) = item.as_array_of_tables_mut() {
            for inner in tables.iter_mut() {
                count += bump_path_versions(inner, new);
            }
        }
    }
    count
}

/// Replaces a string value, keeping the spaces and comment around it.
fn set_string(value: &mut toml_edit::Value, new: &str) {
    let decor = value.decor().clone();
    *value = new.into();
    *value.decor_mut() = decor;
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
        crate::util::run(&mut self.command(args))
    }

    /// The workspace members, from `cargo metadata --no-deps`.
    fn members(&self) -> Result<Vec<Member>, String> {
        let mut cmd = MetadataCommand::new();
        cmd.current_dir(&self.dir).no_deps();
        if self.offline {
            cmd.other_options(vec!["--offline".to_owned()]);
        }
        if let Some(target) = &self.target_dir {
            cmd.env("CARGO_TARGET_DIR", target);
        }
        let metadata = cmd.exec().map_err(|e| format!("cargo metadata: {e}"))?;
        let members = metadata
            .workspace_packages()
            .into_iter()
            .map(|package| Member {
                name: package.name.to_string(),
                manifest: package.manifest_path.clone().into(),
                publishable: package.publish.as_ref().is_none_or(|r| !r.is_empty()),
                features: package
                    .features
                    .keys()
                    .filter(|k| *k != "default")
                    .cloned()
                    .collect(),
                dependencies: package
                    .dependencies
                    .iter()
                    .filter(|d| d.kind != DependencyKind::Development)
                    .map(|d| d.name.clone())
                    .collect(),
            });
        Ok(members.collect())
    }
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

/// Copies a workspace, leaving out build output, VCS data and npm folders.
fn copy_tree(from: &Path, to: &Path) -> Result<(), String> {
    create_dir(to)?;
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

/// `--date`: `YYYY-MM-DD`.
fn parse_date(text: &str) -> Result<String, String> {
    let b = text.as_bytes();
    let ok = b.len() == 10
        && b.iter().enumerate().all(|(i, c)| {
            if i == 4 || i == 7 {
                *c == b'-'
            } else {
                c.is_ascii_digit()
            }
        });
    ok.then(|| text.to_owned())
        .ok_or_else(|| format!("`{text}` is not YYYY-MM-DD"))
}

/// Today's date in UTC, `YYYY-MM-DD`.
fn today_utc() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (y, m, d) = lce_testkit::time::civil_from_days((secs / 86_400) as i64);
    format!("{y:04}-{m:02}-{d:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_to_release() {
        let v = |s| parse_version(s).unwrap();
        assert_eq!(v("1.0.0-rc.1").to_string(), "1.0.0-rc.1");
        for bad in ["1.2", "01.2.3", "1.2.3-01", "1.2.3+build", "v1.2.3", ""] {
            assert!(parse_version(bad).is_err(), "{bad}");
        }
        // Only a greater version is released; a release is above its
        // pre-releases.
        assert!(v("1.0.0-beta.2") < v("1.0.0-beta.11"));
        assert!(v("1.0.0-rc.1") < v("1.0.0") && v("0.9.9") < v("0.10.0"));
        assert!(parse_date("2026-08-17").is_ok());
        assert!(parse_date("2026-8-17").is_err() && parse_date("2026/08/17").is_err());
    }

    #[test]
    fn bumps_workspace_and_internal_versions_only() {
        let manifest = "[workspace.package]\nversion = \"0.1.0\" # lockstep\nrust-version = \"1.85\"\n\n[workspace.dependencies]\na = { path = \"crates/a\", version = \"0.1.0\" }\nserde = { version = \"1.0.0\", features = [\"derive\"] }\n# b = { path = \"x\", version = \"0.1.0\" }\n\n[dependencies.c]\npath = \"../c\"\nversion = \"0.1.0\"\n";
        let mut doc: DocumentMut = manifest.parse().unwrap();
        assert_eq!(bump_manifest(&mut doc, "0.2.0", true), 2);
        // The workspace version and the path dependencies'; not serde's, not
        // a comment; the layout and comments kept.
        assert_eq!(
            doc.to_string(),
            manifest
                .replace("\"0.1.0\" # lockstep", "\"0.2.0\" # lockstep")
                .replace(
                    "\"crates/a\", version = \"0.1.0\"",
                    "\"crates/a\", version = \"0.2.0\""
                )
                .replace(
                    "\"../c\"\nversion = \"0.1.0\"",
                    "\"../c\"\nversion = \"0.2.0\""
                )
        );
        assert_eq!(
            workspace_package_value(&doc, "version").as_deref(),
            Some("0.2.0")
        );
        let member: DocumentMut = "[package]\nversion = { workspace = true }\n"
            .parse()
            .unwrap();
        assert!(package_inherits(&member, "version"));
        assert!(!package_inherits(&member, "rust-version"));
    }

    #[test]
    fn bumps_a_copy_of_this_workspace() {
        // The real manifests, copied to a scratch folder, bumped as a release
        // would, read back.
        let root = workspace_root();
        let scratch =
            std::env::temp_dir().join(format!("xtask-release-test-{}", std::process::id()));
        fs::create_dir_all(&scratch).unwrap();
        let mut changed_lines = 0;
        for (name, path) in [("root", "Cargo.toml"), ("lce", "crates/lce/Cargo.toml")] {
            let copy = scratch.join(format!("{name}.toml"));
            fs::copy(root.join(path), &copy).unwrap();
            let mut doc = read_manifest(&copy).unwrap();
            let before = read(&copy).unwrap();
            let count = bump_manifest(&mut doc, "9.8.7", name == "root");
            write(&copy, doc.to_string()).unwrap();
            let after = read(&copy).unwrap();
            let changed: Vec<(&str, &str)> = before
                .lines()
                .zip(after.lines())
                .filter(|(a, b)| a != b)
                .collect();
            assert_eq!(before.lines().count(), after.lines().count());
            assert_eq!(
                changed.len(),
                count + usize::from(name == "root"),
                "{changed:?}"
            );
            for (old, new) in &changed {
                assert_eq!(old.replace("0.1.0", "9.8.7"), *new);
            }
            changed_lines += changed.len();
            let doc = read_manifest(&copy).unwrap();
            if name == "root" {
                assert_eq!(
                    workspace_package_value(&doc, "version").as_deref(),
                    Some("9.8.7")
                );
                let deps = doc["workspace"]["dependencies"].as_table().unwrap();
                for (dep, spec) in deps.iter() {
                    let version = spec.get("version").and_then(Item::as_str);
                    if spec.get("path").is_some() && version.is_some() {
                        assert_eq!(version, Some("9.8.7"), "{dep}");
                    } else {
                        assert_ne!(version, Some("9.8.7"), "{dep}");
                    }
                }
            } else {
                assert!(package_inherits(&doc, "version"));
            }
        }
        let _ = fs::remove_dir_all(&scratch);
        assert!(changed_lines > 5, "the internal crates were bumped");
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
