//! The layout the code keeps (see lib.rs): layers with data flowing one
//! way — engine → store → operations → face (render, cli) — no import
//! circle between sibling modules, commands that are leaves (no command
//! uses another, and chains of imports among the operations stay short),
//! command files that only parse, run one operation and emit, and a map
//! in lib.rs that names every module.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every module of the crate: its path (`operations::verify`) and its
/// source, with unit tests cut off (they may use anything).
fn modules() -> BTreeMap<String, String> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("list src") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    walk(&src, &mut files);
    let mut modules = BTreeMap::new();
    for file in files {
        let relative = file
            .strip_prefix(&src)
            .expect("under src")
            .with_extension("");
        let mut parts: Vec<String> = relative
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if parts.last().is_some_and(|p| p == "mod") {
            parts.pop();
        }
        if parts == ["lib"] || parts == ["main"] {
            continue;
        }
        let text = std::fs::read_to_string(&file).expect("read a source file");
        let text = match text.find("#[cfg(test)]\nmod tests") {
            Some(at) => text[..at].to_string(),
            None => text,
        };
        modules.insert(parts.join("::"), text);
    }
    modules
}

/// The module paths a source names: `crate::a::b`, `crate::a::{b, c::d}`
/// and `super::x` (relative to `module`).
fn references(module: &str, text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let ident = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == ':';
    let mut push_path = |prefix: &str, rest: &str| {
        if let Some(group) = rest.strip_prefix('{') {
            let inner = &group[..group.find('}').unwrap_or(group.len())];
            for item in inner.split(',') {
                let item = item.trim();
                let name: String = item.chars().take_while(|&c| ident(c)).collect();
                if name == "self" {
                    found.insert(prefix.trim_end_matches("::").to_string());
                } else if !name.is_empty() {
                    found.insert(format!("{prefix}{name}"));
                }
            }
        } else {
            let name: String = rest.chars().take_while(|&c| ident(c)).collect();
            found.insert(format!("{prefix}{}", name.trim_end_matches("::")));
        }
    };
    for (at, _) in text.match_indices("crate::") {
        let rest = &text[at + "crate::".len()..];
        let path: String = rest.chars().take_while(|&c| ident(c)).collect();
        push_path(&path, &rest[path.len()..]);
    }
    // `super` of `a::b` is `a`, whether b is a file or a directory.
    let parts: Vec<&str> = module.split("::").collect();
    let base = parts[..parts.len() - 1].join("::");
    for (at, _) in text.match_indices("super::") {
        let rest = &text[at + "super::".len()..];
        let prefix = if base.is_empty() {
            String::new()
        } else {
            format!("{base}::")
        };
        let path: String = rest.chars().take_while(|&c| ident(c)).collect();
        push_path(&format!("{prefix}{path}"), &rest[path.len()..]);
    }
    found
        .into_iter()
        .map(|p| p.trim_end_matches("::").to_string())
        .collect()
}

/// The module a path names: its longest prefix that is a module.
fn resolve<'a>(modules: &'a BTreeMap<String, String>, path: &str) -> Option<&'a str> {
    let mut parts: Vec<&str> = path.split("::").collect();
    while !parts.is_empty() {
        if let Some((name, _)) = modules.get_key_value(&parts.join("::")) {
            return Some(name);
        }
        parts.pop();
    }
    None
}

/// Which modules each module uses (itself and its ancestors left out).
fn dependencies() -> BTreeMap<String, BTreeSet<String>> {
    let modules = modules();
    let mut graph = BTreeMap::new();
    for (module, text) in &modules {
        let uses: BTreeSet<String> = references(module, text)
            .iter()
            .filter_map(|r| resolve(&modules, r))
            .filter(|target| {
                *target != module.as_str() && !module.starts_with(&format!("{target}::"))
            })
            .map(str::to_string)
            .collect();
        graph.insert(module.clone(), uses);
    }
    graph
}

/// Edges between siblings: `a::x::… → a::y::…` becomes `a::x → a::y`.
fn sibling_edges(graph: &BTreeMap<String, BTreeSet<String>>) -> BTreeMap<String, BTreeSet<String>> {
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (from, targets) in graph {
        for to in targets {
            let a: Vec<&str> = from.split("::").collect();
            let b: Vec<&str> = to.split("::").collect();
            let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
            if common == a.len() || common == b.len() {
                continue;
            }
            edges
                .entry(a[..=common].join("::"))
                .or_default()
                .insert(b[..=common].join("::"));
        }
    }
    edges
}

#[test]
fn no_two_sibling_modules_use_each_other_even_through_others() {
    let edges = sibling_edges(&dependencies());
    // A module may reach a sibling that reaches it back only if there is a
    // circle: search from every module.
    let mut circles = Vec::new();
    for start in edges.keys() {
        let mut stack = vec![vec![start.clone()]];
        let mut seen = BTreeSet::new();
        while let Some(path) = stack.pop() {
            let last = path.last().expect("non-empty");
            for next in edges.get(last).into_iter().flatten() {
                if next == start {
                    let mut circle = path.clone();
                    circle.push(next.clone());
                    circles.push(circle.join(" → "));
                } else if seen.insert(next.clone()) {
                    let mut longer = path.clone();
                    longer.push(next.clone());
                    stack.push(longer);
                }
            }
        }
    }
    assert_eq!(circles, Vec::<String>::new(), "import circles");
}

#[test]
fn data_flows_from_the_engine_through_the_operations_to_the_face() {
    let graph = dependencies();
    let layer = |module: &str| match module.split("::").next() {
        Some("engine") => 0,
        Some("store") => 1,
        Some("operations") => 2,
        Some("render") => 3,
        Some("cli") => 4,
        // The fuzz properties, a test hook, may use every layer.
        _ => 5,
    };
    let mut upwards = Vec::new();
    for (from, targets) in &graph {
        for to in targets {
            if layer(to) > layer(from) {
                upwards.push(format!("{from} uses {to}"));
            }
        }
    }
    assert_eq!(upwards, Vec::<String>::new(), "a layer uses one above it");
    let engine_from_cli: Vec<String> = graph
        .iter()
        .filter(|(from, _)| from.starts_with("cli"))
        .flat_map(|(from, to)| {
            to.iter()
                .filter(|t| t.starts_with("engine"))
                .map(move |t| format!("{from} uses {t}"))
        })
        .collect();
    assert_eq!(
        engine_from_cli,
        Vec::<String>::new(),
        "the command line reaches the engine only through an operation"
    );
}

/// The modules of `operations` that are not commands: what the commands
/// share (report types, findings and their checks, exit statuses,
/// contract versions, numbers).
const SHARED_OPERATIONS: [&str; 5] = [
    "operations::exit",
    "operations::findings",
    "operations::numbers",
    "operations::report",
    "operations::schema",
];

/// The command an `operations` module belongs to (`operations::verify`
/// for `operations::verify::checks`), or `None` for a shared module.
fn command_of(module: &str) -> Option<String> {
    let parts: Vec<&str> = module.split("::").collect();
    if parts.first() != Some(&"operations") || parts.len() < 2 {
        return None;
    }
    let top = format!("operations::{}", parts[1]);
    (!SHARED_OPERATIONS.contains(&top.as_str())).then_some(top)
}

#[test]
fn no_command_uses_another_command() {
    let mut crossings = Vec::new();
    for (from, targets) in dependencies() {
        let Some(command) = command_of(&from) else {
            continue;
        };
        for to in targets {
            if let Some(other) = command_of(&to)
                && other != command
            {
                crossings.push(format!("{from} uses {to}"));
            }
        }
    }
    assert_eq!(crossings, Vec::<String>::new(), "a command uses another");
}

#[test]
fn chains_of_imports_among_the_operations_are_at_most_three_modules_long() {
    let graph = dependencies();
    let inside = |m: &str| m.starts_with("operations::");
    // The longest chain from each module, by depth-first search (the
    // graph has no circles: another test checks that).
    fn longest(
        module: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        inside: &dyn Fn(&str) -> bool,
        memo: &mut BTreeMap<String, Vec<String>>,
    ) -> Vec<String> {
        if let Some(chain) = memo.get(module) {
            return chain.clone();
        }
        let mut best = Vec::new();
        for next in graph.get(module).into_iter().flatten() {
            if inside(next) && next != module {
                let chain = longest(next, graph, inside, memo);
                if chain.len() > best.len() {
                    best = chain;
                }
            }
        }
        let mut chain = vec![module.to_string()];
        chain.extend(best);
        memo.insert(module.to_string(), chain.clone());
        chain
    }
    let mut memo = BTreeMap::new();
    let too_long: Vec<String> = graph
        .keys()
        .filter(|m| inside(m))
        .map(|m| longest(m, &graph, &inside, &mut memo))
        .filter(|chain| chain.len() > 3)
        .map(|chain| chain.join(" → "))
        .collect();
    assert_eq!(
        too_long,
        Vec::<String>::new(),
        "chains of more than three modules"
    );
}

#[test]
fn each_command_file_only_parses_runs_one_operation_and_emits() {
    let cli = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/cli");
    // The shared parts of the command line, not commands.
    let shared = [
        "forensics.rs",
        "mod.rs",
        "man.rs",
        "output.rs",
        "select.rs",
        "write.rs",
    ];
    let mut long = Vec::new();
    let mut commands = Vec::new();
    for entry in std::fs::read_dir(&cli).expect("list src/cli") {
        let path = entry.expect("entry").path();
        let name = path
            .file_name()
            .expect("a name")
            .to_string_lossy()
            .into_owned();
        if shared.contains(&name.as_str()) {
            continue;
        }
        let lines = std::fs::read_to_string(&path)
            .expect("read")
            .lines()
            .count();
        if lines > 120 {
            long.push(format!("{name}: {lines} lines"));
        }
        commands.push(name);
    }
    commands.sort();
    assert_eq!(
        commands,
        [
            "compact.rs",
            "completions.rs",
            "diff.rs",
            "explain.rs",
            "inspect.rs",
            "migrate.rs",
            "recover.rs",
            "repair.rs",
            "verify.rs"
        ]
    );
    assert_eq!(long, Vec::<String>::new(), "command files over 120 lines");
}

#[test]
fn the_map_in_lib_rs_names_every_module() {
    let lib = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs"))
        .expect("read lib.rs");
    let map: String = lib
        .lines()
        .filter_map(|l| l.strip_prefix("//!"))
        .collect::<Vec<_>>()
        .join("\n");
    let missing: Vec<String> = modules()
        .into_keys()
        .filter(|m| !map.contains(&format!("`{m}`")) && !map.contains(&format!("[`{m}`]")))
        .collect();
    assert_eq!(
        missing,
        Vec::<String>::new(),
        "modules missing from the map"
    );
}
