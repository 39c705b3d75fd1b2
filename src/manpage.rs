//! `factory-mcp completions SHELL` and `factory-mcp man`: generated from the clap definitions,
//! so they always match the binary.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::CommandFactory as _;

/// Print a shell completion script.
#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell (bash, zsh, fish, elvish, powershell).
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// Print the man page (roff), or write one page per subcommand.
#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// Write factory-mcp.1 and factory-mcp-SUBCOMMAND.1 into this directory instead.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

pub fn completions(args: CompletionsArgs) -> ExitCode {
    let mut cmd = crate::Cli::command();
    let mut buf = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "factory-mcp", &mut buf);
    write_stdout(&buf)
}

pub fn man(args: ManArgs) -> ExitCode {
    let cmd = crate::Cli::command();
    match args.out {
        None => {
            let mut buf = Vec::new();
            if let Err(e) = clap_mangen::Man::new(cmd).render(&mut buf) {
                eprintln!("factory-mcp: cannot render the man page: {e}");
                return ExitCode::from(1);
            }
            write_stdout(&buf)
        }
        Some(dir) => match clap_mangen::generate_to(cmd, &dir) {
            Ok(()) => {
                println!(
                    "man pages written to {}",
                    crate::setup::clean(&dir.display().to_string())
                );
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!(
                    "factory-mcp: cannot write man pages to {}: {e}",
                    dir.display()
                );
                ExitCode::from(1)
            }
        },
    }
}

fn write_stdout(buf: &[u8]) -> ExitCode {
    let mut out = std::io::stdout().lock();
    match out.write_all(buf).and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        // A closed pipe (`| head`) is not an error worth a message.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("factory-mcp: {e}");
            ExitCode::from(1)
        }
    }
}
