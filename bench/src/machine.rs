//! What the report says about the machine and the software measured.

use std::process::Command;

/// One `label: value` line of the machine table.
pub type Fact = (&'static str, String);

fn first_line(text: &str) -> String {
    text.lines().next().unwrap_or_default().trim().to_owned()
}

/// The first line a command prints, or `unknown` when it cannot run.
fn command(program: &str, args: &[&str]) -> String {
    Command::new(program)
        .args(args)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| first_line(&String::from_utf8_lossy(&o.stdout)))
        .filter(|line| !line.is_empty())
        .unwrap_or_else(|| "unknown".to_owned())
}

fn proc_field(file: &str, key: &str) -> String {
    std::fs::read_to_string(file)
        .ok()
        .and_then(|text| {
            text.lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown".to_owned())
}

/// The machine, the toolchain and the services.
pub fn facts() -> Vec<Fact> {
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    vec![
        (
            "CPU",
            format!("{} × {cores}", proc_field("/proc/cpuinfo", "model name")),
        ),
        ("Memory", proc_field("/proc/meminfo", "MemTotal")),
        (
            "Kernel",
            first_line(&std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default()),
        ),
        ("rustc", command("rustc", &["--version"])),
        (
            "deepfleet",
            format!("{} (release build, this tree)", env!("CARGO_PKG_VERSION")),
        ),
        ("Redis", command("redis-server", &["--version"])),
        (
            "RabbitMQ",
            command("dpkg-query", &["-W", "-f", "${Version}", "rabbitmq-server"]),
        ),
    ]
}
