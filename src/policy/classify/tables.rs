//! The tables behind the program rules: which programs are shells, interpreters, build and
//! test runners, quiet printers, judged by their name alone (network, disks, services, cloud
//! CLIs...), read-only readers (with the options that change that), programs that change the
//! files they name, programs that look at or control system state by subcommand, network
//! clients, and package managers (with their read-only, installing and script-running
//! subcommands).
//! Kept apart from the rules so adding a program is adding a line.

use crate::protocol::Risk;

/// Shells: `-c` strings and here-documents are parsed as scripts.
pub(super) const SHELLS: &[&str] = &[
    "sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "yash", "fish", "csh", "tcsh", "rbash",
];

/// Interpreters: run code we cannot read (`python -c`, `node script.js`).
pub(super) const INTERPRETERS: &[&str] = &[
    "node", "nodejs", "deno", "ruby", "irb", "perl", "php", "lua", "luajit", "Rscript", "R",
    "julia", "tclsh", "wish", "osascript", "pwsh", "powershell", "groovy", "scala", "kotlin",
    "java", "jshell", "ghci", "runghc", "runhaskell", "elixir", "erl", "escript", "swift", "pypy",
    "pypy3", "guile", "racket", "sbcl", "ocaml", "expect",
];

/// Build tools, test runners and compilers: they run project code the agent can edit.
pub(super) const RUNNERS: &[&str] = &[
    "make", "gmake", "cmake", "ninja", "meson", "gradle", "gradlew", "mvn", "mvnw", "ant", "bazel",
    "bazelisk", "buck", "buck2", "scons", "just", "task", "rake", "invoke", "pytest", "py.test",
    "tox", "nox", "jest", "vitest", "mocha", "ava", "karma", "phpunit", "rspec", "ctest", "tsc",
    "eslint", "prettier", "black", "ruff", "mypy", "flake8", "pylint", "rustc", "gcc", "g++", "cc",
    "c++", "clang", "clang++", "javac", "swiftc", "zig", "dotnet", "nx", "turbo", "lerna",
    "webpack", "vite", "rollup", "esbuild", "next", "nuxt", "ng",
];

/// Programs that only print something and take no path arguments.
pub(super) const QUIET: &[&str] = &[
    "echo", "pwd", "whoami", "id", "groups", "uname", "true", "false", ":", "seq", "yes", "sleep",
    "nproc", "uptime", "arch", "tty", "locale", "logname", "users", "who", "w", "pgrep", "which",
    "whereis", "type", "basename", "dirname", "expr", "factor", "numfmt", "wait", "exit",
    "return", "break", "continue", "shift", "getopts", "dirs", "free", "lscpu", "cal", "clear",
    "help", "lsb_release", "sw_vers", "ulimit", "umask", "unalias", "tr", "let", "times",
    "caller", "popd",
];

/// A program judged by its name alone: how risky any use of it is, and why.
pub(super) struct ByName {
    pub(super) risk: Risk,
    /// Why, with `{name}` standing for the program as it was called.
    pub(super) why: &'static str,
    /// Its path-looking arguments are recorded as reads (`ssh -i key`, `open report.pdf`).
    pub(super) reads_paths: bool,
}

const fn by_name(risk: Risk, why: &'static str, reads_paths: bool) -> ByName {
    ByName { risk, why, reads_paths }
}

/// Programs whose every use has one risk, whatever their arguments say.
pub(super) fn judged_by_name(name: &str) -> Option<ByName> {
    use Risk::{Dangerous, Moderate};
    Some(match name {
        "printenv" => by_name(Moderate, "printenv prints environment variables, which may hold secrets, into the chat", false),
        "awk" | "gawk" | "mawk" | "nawk" | "busybox-awk" => by_name(Moderate, "{name} runs an awk program, which can run commands (system())", true),
        "journalctl" | "dmesg" => by_name(Moderate, "{name} reads system logs", false),
        "open" | "xdg-open" | "gio" | "start" => by_name(Moderate, "{name} opens a file or address with another program", true),
        "ssh" | "scp" | "sftp" | "rsync" | "nc" | "ncat" | "netcat" | "socat" | "telnet" | "ftp"
        | "tftp" | "ssh-copy-id" | "mosh" | "sshpass" | "rclone" => by_name(Dangerous, "{name} connects to other machines", true),
        "kill" | "pkill" | "killall" | "killall5" | "skill" | "xkill" => by_name(Dangerous, "{name} stops other processes", false),
        "mke2fs" | "mkswap" | "wipefs" | "fdisk" | "sfdisk" | "gdisk" | "sgdisk" | "parted"
        | "cryptsetup" | "losetup" | "mount" | "umount" | "swapon" | "swapoff" | "fsck" | "tune2fs"
        | "resize2fs" | "blkdiscard" | "hdparm" | "diskutil" => by_name(Dangerous, "{name} changes disks or filesystems", false),
        "shutdown" | "reboot" | "halt" | "poweroff" | "init" | "telinit" => by_name(Dangerous, "{name} can turn off or restart the machine", false),
        "service" | "launchctl" | "at" | "batch" | "loginctl" | "rc-service" => by_name(Dangerous, "{name} controls system services or scheduled jobs", false),
        "kubectl" | "helm" | "terraform" | "tofu" | "pulumi" | "aws" | "gcloud" | "gsutil" | "az"
        | "gh" | "glab" | "vagrant" | "ansible" | "ansible-playbook" | "heroku" | "fly" | "flyctl"
        | "vercel" | "netlify" | "firebase" => by_name(Dangerous, "{name} acts on remote services with your credentials", false),
        "useradd" | "userdel" | "usermod" | "groupadd" | "groupdel" | "groupmod" | "passwd"
        | "chpasswd" | "visudo" | "chsh" | "chfn" | "adduser" | "deluser" => by_name(Dangerous, "{name} changes user accounts", false),
        "iptables" | "ip6tables" | "nft" | "ufw" | "firewall-cmd" | "route" | "ifconfig" | "modprobe"
        | "insmod" | "rmmod" | "sysctl" | "kexec" | "setenforce" | "csrutil" | "nvram" => by_name(Dangerous, "{name} changes the system configuration", false),
        _ => return None,
    })
}

/// A program that changes the files its operands name: how risky any use is, its options
/// that take a value, and which option values are paths it reads or writes.
pub(super) struct Changer {
    /// `None` when only where it writes decides (`tee`).
    pub(super) risk: Option<(Risk, &'static str)>,
    pub(super) val_short: &'static str,
    pub(super) val_long: &'static [&'static str],
    pub(super) reads: &'static [&'static str],
    pub(super) writes: &'static [&'static str],
    /// The first operand is not a file (chmod's mode), unless one of these gives it instead.
    pub(super) mode_first: Option<&'static [&'static str]>,
}

const fn changer(risk: Risk, why: &'static str, val_short: &'static str, val_long: &'static [&'static str]) -> Changer {
    Changer { risk: Some((risk, why)), val_short, val_long, reads: &[], writes: &[], mode_first: None }
}

/// Programs that create, move, delete or re-permission the files named by their operands (the
/// reason's `{name}` is the program as called). Their operands are judged as writes.
pub(super) fn changer_of(name: &str) -> Option<Changer> {
    use Risk::{Dangerous, Moderate};
    const OWNERSHIP: &str = "{name} changes permissions or ownership";
    Some(match name {
        "touch" => Changer { reads: &["-r", "--reference"], ..changer(Moderate, "touch creates or changes files", "drt", &["--date", "--reference", "--time"]) },
        "mkdir" => changer(Moderate, "mkdir creates directories", "m", &["--mode", "--context"]),
        "tee" => Changer { risk: None, ..changer(Moderate, "", "", &[]) },
        "mv" => Changer { writes: &["-t", "--target-directory"], ..changer(Moderate, "mv moves files, replacing any file at the target", "tS", &["--target-directory", "--suffix"]) },
        "rm" | "rmdir" | "unlink" | "srm" | "wipe" => changer(Dangerous, "{name} deletes files", "", &["--iterations", "--size", "--random-source"]),
        "shred" => changer(Dangerous, "{name} deletes files", "ns", &["--iterations", "--size", "--random-source"]),
        "truncate" => changer(Dangerous, "truncate destroys file contents", "sr", &["--size", "--reference"]),
        "chmod" | "chown" | "chgrp" | "chcon" => Changer { mode_first: Some(&["--reference"]), ..changer(Dangerous, OWNERSHIP, "", &["--reference", "--from"]) },
        "chattr" | "setfacl" => changer(Dangerous, OWNERSHIP, "", &["--reference", "--from"]),
        _ => return None,
    })
}

/// Programs whose first operand says whether they only look at system state or change it:
/// the operands that look (a trailing `*` matches any ending), and the reasons either way.
pub(super) struct Controller {
    pub(super) looks: &'static [&'static str],
    /// With `{name}` and `{sub}` (the first operand).
    pub(super) looks_why: &'static str,
    pub(super) changes_why: &'static str,
}

pub(super) fn controller(name: &str) -> Option<Controller> {
    Some(match name {
        "systemctl" => Controller {
            looks: &["status", "show", "cat", "list-*", "is-*"],
            looks_why: "systemctl {sub} reads the state of system services",
            changes_why: "systemctl controls system services",
        },
        "docker" | "podman" | "nerdctl" => Controller {
            looks: &["ps", "images", "version", "info", "inspect", "logs", "top", "stats"],
            looks_why: "{name} {sub} reads the state of containers",
            changes_why: "{name} controls containers, which can reach the whole machine",
        },
        _ => return None,
    })
}

/// Programs that talk to the network: any use may upload files or download code.
pub(super) const NETWORK: &[&str] = &[
    "curl", "wget", "aria2c", "http", "https", "xh", "httpie", "lynx", "links", "w3m",
];

/// Options of a read-only program: which take a value, which values are paths, which make
/// the program write or run things.
pub(super) struct Reader {
    pub(super) val_short: &'static str,
    pub(super) val_long: &'static [&'static str],
    pub(super) reads: &'static [&'static str],
    pub(super) writes: &'static [&'static str],
    /// Options that make the program more than a reader, with the reason.
    pub(super) unsafe_opts: &'static [(&'static str, &'static str)],
    /// The first operand is a pattern or program, not a file, unless one of these is given.
    pub(super) pattern_first: Option<&'static [&'static str]>,
    /// The second operand is an output file (`uniq in out`).
    pub(super) second_writes: bool,
    /// Operands starting with `+` are commands (`less +!cmd`).
    pub(super) plus_runs: bool,
}

const PLAIN: Reader = Reader {
    val_short: "",
    val_long: &[],
    reads: &[],
    writes: &[],
    unsafe_opts: &[],
    pattern_first: None,
    second_writes: false,
    plus_runs: false,
};

pub(super) const FOLLOWS: &str = "follows symlinks, which may lead outside the sandbox root";
const CHECK_LIST: &str = "reads the files a checksum list names, which ground-link does not see";

pub(super) fn reader(name: &str) -> Option<Reader> {
    Some(match name {
        // Only options that really take a value may swallow the next word: `cat -s FILE`
        // squeezes blank lines and reads FILE.
        "cat" | "rev" | "comm" | "tsort" | "readlink" | "zcat" | "bzcat" | "xzcat" | "zstdcat"
        | "lzcat" | "sum" => PLAIN,
        // `-c LIST` reads every file the list names, paths ground-link never sees.
        "md5sum" | "sha1sum" | "sha224sum" | "sha256sum" | "sha384sum" | "sha512sum" => {
            Reader {
                unsafe_opts: &[("-c", CHECK_LIST), ("--check", CHECK_LIST)],
                ..PLAIN
            }
        }
        "tac" => Reader {
            val_short: "s",
            val_long: &["--separator"],
            ..PLAIN
        },
        "b2sum" => Reader {
            val_short: "l",
            val_long: &["--length"],
            unsafe_opts: &[("-c", CHECK_LIST), ("--check", CHECK_LIST)],
            ..PLAIN
        },
        "cksum" => Reader {
            val_short: "al",
            val_long: &["--algorithm", "--length"],
            ..PLAIN
        },
        "base32" | "base64" | "basenc" => Reader {
            val_short: "w",
            val_long: &["--wrap"],
            ..PLAIN
        },
        "head" | "tail" => Reader {
            val_short: "ncs",
            val_long: &[
                "--lines", "--bytes", "--sleep-interval", "--pid", "--max-unchanged-stats",
            ],
            ..PLAIN
        },
        "wc" => Reader {
            reads: &["--files0-from"],
            ..PLAIN
        },
        "nl" => Reader {
            val_short: "bdfhilnsvw",
            ..PLAIN
        },
        "ls" | "dir" | "vdir" => Reader {
            val_short: "IwT",
            val_long: &["--ignore", "--hide", "--width", "--tabsize"],
            unsafe_opts: &[("-L", FOLLOWS), ("--dereference", FOLLOWS)],
            ..PLAIN
        },
        "stat" => Reader {
            val_short: "c",
            val_long: &["--format", "--printf"],
            ..PLAIN
        },
        "file" => Reader {
            val_short: "mfFPe",
            val_long: &[
                "--magic-file", "--files-from", "--separator", "--parameter", "--exclude",
            ],
            reads: &["-m", "--magic-file", "-f", "--files-from"],
            unsafe_opts: &[
                ("-C", "file -C writes a compiled magic file"),
                ("--compile", "file -C writes a compiled magic file"),
            ],
            ..PLAIN
        },
        "du" => Reader {
            val_short: "BdtX",
            val_long: &[
                "--block-size", "--max-depth", "--threshold", "--exclude-from", "--exclude",
            ],
            reads: &["-X", "--exclude-from", "--files0-from"],
            unsafe_opts: &[("-L", FOLLOWS), ("--dereference", FOLLOWS)],
            ..PLAIN
        },
        "df" => Reader {
            val_short: "Btx",
            val_long: &["--block-size", "--type", "--exclude-type"],
            ..PLAIN
        },
        "diff" => Reader {
            val_short: "CUFIxXWLD",
            val_long: &[
                "--exclude", "--exclude-from", "--ignore-matching-lines", "--label",
            ],
            reads: &["-X", "--exclude-from", "--from-file", "--to-file"],
            unsafe_opts: &[("-r", FOLLOWS), ("--recursive", FOLLOWS)],
            ..PLAIN
        },
        "cmp" => Reader {
            val_short: "in",
            val_long: &["--ignore-initial", "--bytes"],
            ..PLAIN
        },
        "cut" => Reader {
            val_short: "bcdf",
            val_long: &[
                "--bytes", "--characters", "--delimiter", "--fields", "--output-delimiter",
            ],
            ..PLAIN
        },
        "paste" => Reader {
            val_short: "d",
            val_long: &["--delimiters"],
            ..PLAIN
        },
        "join" => Reader {
            val_short: "12jteo",
            ..PLAIN
        },
        // util-linux column: `-d` (no headings) and `-t` are flags.
        "column" => Reader {
            val_short: "scoNRHWElOTrinp",
            ..PLAIN
        },
        "fold" => Reader {
            val_short: "w",
            val_long: &["--width"],
            ..PLAIN
        },
        // fmt: `-t` (tagged paragraphs) and `-s` are flags.
        "fmt" => Reader {
            val_short: "wgp",
            val_long: &["--width", "--prefix", "--goal"],
            ..PLAIN
        },
        "expand" | "unexpand" => Reader {
            val_short: "t",
            val_long: &["--tabs"],
            ..PLAIN
        },
        "od" => Reader {
            val_short: "AjNSt",
            ..PLAIN
        },
        "hexdump" => Reader {
            val_short: "efns",
            reads: &["-f"],
            ..PLAIN
        },
        "strings" => Reader {
            val_short: "ntTe",
            ..PLAIN
        },
        "realpath" => Reader {
            reads: &["--relative-to", "--relative-base"],
            val_long: &["--relative-to", "--relative-base"],
            ..PLAIN
        },
        "look" => Reader {
            val_short: "t",
            pattern_first: Some(&[]),
            ..PLAIN
        },
        "grep" | "egrep" | "fgrep" | "zgrep" => Reader {
            val_short: "efmABCdD",
            val_long: &[
                "--regexp", "--file", "--max-count", "--after-context", "--before-context",
                "--context", "--include", "--exclude", "--exclude-dir", "--exclude-from",
                "--label", "--binary-files", "--devices", "--directories", "--group-separator",
            ],
            reads: &["-f", "--file", "--exclude-from"],
            unsafe_opts: &[("-R", FOLLOWS), ("--dereference-recursive", FOLLOWS)],
            pattern_first: Some(&["-e", "--regexp", "-f", "--file"]),
            ..PLAIN
        },
        "rg" => Reader {
            val_short: "efgtTmABCjMdEr",
            val_long: &[
                "--regexp", "--file", "--glob", "--iglob", "--type", "--type-not", "--type-add",
                "--type-clear", "--max-count", "--after-context", "--before-context", "--context",
                "--threads", "--max-columns", "--max-depth", "--maxdepth", "--encoding",
                "--replace", "--sort", "--sortr", "--max-filesize", "--colors", "--color",
                "--context-separator", "--field-match-separator", "--field-context-separator",
                "--path-separator", "--engine", "--dfa-size-limit", "--regex-size-limit",
                "--ignore-file", "--pre", "--pre-glob", "--hostname-bin", "--hyperlink-format",
                "--generate",
            ],
            reads: &["-f", "--file", "--ignore-file"],
            unsafe_opts: &[
                ("--pre", "rg --pre runs a program on every file it searches"),
                (
                    "--pre-glob", "rg --pre runs a program on every file it searches",
                ),
                ("--hostname-bin", "rg --hostname-bin runs a program"),
                ("-L", FOLLOWS),
                ("--follow", FOLLOWS),
            ],
            pattern_first: Some(&["-e", "--regexp", "-f", "--file", "--files", "--type-list"]),
            ..PLAIN
        },
        "ag" => Reader {
            val_short: "ABCGgm",
            val_long: &[
                "--after", "--before", "--context", "--file-search-regex", "--max-count",
                "--ignore", "--ignore-dir", "--pager", "--path-to-ignore",
            ],
            reads: &["-p", "--path-to-ignore"],
            unsafe_opts: &[
                ("--pager", "ag --pager runs a program"),
                ("-f", FOLLOWS),
                ("--follow", FOLLOWS),
            ],
            pattern_first: Some(&["-g"]),
            ..PLAIN
        },
        "ack" => Reader {
            val_short: "ABCgm",
            val_long: &[
                "--after-context", "--before-context", "--context", "--max-count", "--pager",
                "--ackrc", "--type",
            ],
            unsafe_opts: &[
                ("--pager", "ack --pager runs a program"),
                (
                    "--ackrc", "ack --ackrc loads options (such as --pager) from a file",
                ),
                ("--follow", FOLLOWS),
            ],
            pattern_first: Some(&["-f", "-g"]),
            ..PLAIN
        },
        "tree" => Reader {
            val_short: "LPIHTo",
            val_long: &[
                "--filelimit", "--timefmt", "--sort", "--charset", "--gitfile",
            ],
            reads: &["--gitfile", "--infile"],
            writes: &["-o"],
            unsafe_opts: &[
                ("-R", "tree -R writes HTML files into directories"),
                ("-l", FOLLOWS),
            ],
            ..PLAIN
        },
        "sort" => Reader {
            val_short: "kotTS",
            val_long: &[
                "--key", "--output", "--field-separator", "--temporary-directory", "--buffer-size",
                "--batch-size", "--parallel", "--compress-program", "--files0-from",
                "--random-source", "--sort",
            ],
            reads: &["--files0-from", "--random-source"],
            writes: &["-o", "--output", "-T", "--temporary-directory"],
            unsafe_opts: &[(
                "--compress-program", "sort --compress-program runs a program",
            )],
            ..PLAIN
        },
        "uniq" => Reader {
            val_short: "fsw",
            // `--group` and `--all-repeated` take a value only after `=`.
            val_long: &["--skip-fields", "--skip-chars", "--check-chars"],
            second_writes: true,
            ..PLAIN
        },
        "xxd" => Reader {
            val_short: "cglosn",
            second_writes: true,
            ..PLAIN
        },
        "less" | "more" | "most" => Reader {
            val_short: "bhjkoOpPtTxyz#",
            val_long: &[
                "--log-file", "--LOG-FILE", "--lesskey-file", "--lesskey-src", "--tag",
                "--pattern",
            ],
            writes: &["-o", "-O", "--log-file", "--LOG-FILE"],
            unsafe_opts: &[
                ("-k", "less -k loads key bindings, which can run commands"),
                (
                    "--lesskey-file",
                    "less --lesskey-file loads key bindings, which can run commands",
                ),
                (
                    "--lesskey-src",
                    "less --lesskey-src loads key bindings, which can run commands",
                ),
                (
                    "--lesskey-content",
                    "less --lesskey-content defines key bindings, which can run commands",
                ),
            ],
            plus_runs: true,
            ..PLAIN
        },
        _ => return None,
    })
}


pub(super) type Subs = &'static [&'static str];

/// (read-only subcommands, installing subcommands, script-running subcommands).
pub(super) fn package_manager(name: &str) -> Option<(Subs, Subs, Subs)> {
    const NONE: Subs = &[];
    Some(match name {
        "npm" => (
            &["list", "ls", "outdated", "view", "info", "v", "la", "ll"],
            &[
                "install", "i", "in", "ins", "inst", "insta", "instal", "isnt", "isnta", "isntal",
                "isntall", "add", "ci", "clean-install", "ic", "install-clean", "isntall-clean",
                "it", "cit", "install-test", "install-ci-test", "update", "up", "upgrade",
                "udpate", "uninstall", "unin", "unins", "uninst", "uninsta", "uninstal", "remove",
                "rm", "r", "un", "unlink", "link", "ln", "publish", "unpublish", "deprecate",
                "dist-tag", "owner", "access", "adduser", "add-user", "login", "logout", "token",
                "rebuild", "rb", "prune", "dedupe", "ddp",
            ],
            &[
                "run", "run-script", "rum", "urn", "test", "t", "tst", "start", "stop", "restart",
                "exec", "x", "pack",
            ],
        ),
        "yarn" => (
            &["list", "info", "why"],
            &[
                "add", "install", "remove", "upgrade", "up", "upgrade-interactive", "publish",
                "link", "unlink", "global", "dlx", "import",
            ],
            &["run", "test", "start", "exec", "node", "build"],
        ),
        "pnpm" => (
            &["list", "ls", "why", "ll", "la"],
            &[
                "add", "install", "i", "remove", "rm", "uninstall", "un", "update", "up",
                "upgrade", "publish", "link", "ln", "unlink", "dlx", "import", "rebuild", "rb",
                "install-test", "it",
            ],
            &["run", "test", "t", "tst", "start", "exec", "x"],
        ),
        "bun" => (
            NONE,
            &[
                "add", "a", "install", "i", "remove", "rm", "update", "upgrade", "publish", "link",
                "unlink",
            ],
            &["run", "test", "x", "exec", "build"],
        ),
        "npx" | "bunx" | "pnpx" => (NONE, NONE, NONE),
        "pip" | "pip3" | "pipx" => (
            NONE,
            &[
                "install", "uninstall", "download", "wheel", "inject", "reinstall", "upgrade",
            ],
            &["run"],
        ),
        "uv" => (NONE, &["add", "remove", "sync", "tool", "python"], &["run"]),
        "poetry" | "pdm" | "hatch" | "rye" => (
            NONE,
            &[
                "add", "remove", "install", "update", "lock", "publish", "self", "sync",
            ],
            &["run", "shell"],
        ),
        "conda" | "mamba" | "micromamba" => (
            NONE,
            &[
                "install", "remove", "uninstall", "update", "upgrade", "create",
            ],
            &["run"],
        ),
        "gem" => (
            NONE,
            &["install", "uninstall", "update", "push", "cleanup"],
            NONE,
        ),
        "bundle" | "bundler" => (NONE, &["install", "update", "add", "remove"], &["exec"]),
        "composer" => (
            NONE,
            &[
                "install", "require", "remove", "update", "create-project", "global",
            ],
            &["run-script", "run", "exec"],
        ),
        "brew" => (
            NONE,
            &[
                "install", "uninstall", "remove", "rm", "upgrade", "reinstall", "tap", "untap",
                "update", "link", "unlink", "cleanup", "autoremove", "services",
            ],
            NONE,
        ),
        "port" => (
            NONE,
            &[
                "install", "uninstall", "upgrade", "selfupdate", "activate", "deactivate",
            ],
            NONE,
        ),
        "apt" | "apt-get" | "aptitude" => (
            NONE,
            &[
                "install", "remove", "purge", "autoremove", "upgrade", "dist-upgrade",
                "full-upgrade", "update", "reinstall", "build-dep",
            ],
            NONE,
        ),
        "dnf" | "yum" | "zypper" | "apk" | "pkg" => (
            NONE,
            &[
                "install", "in", "remove", "rm", "erase", "upgrade", "up", "update", "reinstall",
                "autoremove", "add", "del", "downgrade", "dup", "patch", "distro-sync", "swap",
            ],
            NONE,
        ),
        "snap" | "flatpak" => (
            NONE,
            &[
                "install", "remove", "uninstall", "refresh", "revert", "update", "enable",
                "disable",
            ],
            &["run"],
        ),
        "pacman" | "yay" | "paru" | "nix-env" => (NONE, NONE, NONE),
        "rustup" => (
            NONE,
            &[
                "install", "update", "uninstall", "toolchain", "target", "component", "self",
                "default", "override", "set",
            ],
            &["run"],
        ),
        "deno" => (
            NONE,
            &["install", "add", "uninstall"],
            &["run", "task", "test", "bench"],
        ),
        _ => return None,
    })
}

/// Variables whose value some program runs as a command line.
pub(crate) const COMMAND_VARS: &[&str] = &[
    "GREP", "PAGER", "MANPAGER", "GIT_PAGER", "EDITOR", "VISUAL", "BROWSER", "GIT_EDITOR",
    "GIT_SSH_COMMAND", "GIT_SSH", "SSH_ASKPASS", "SUDO_ASKPASS", "GIT_ASKPASS", "LESSOPEN",
    "LESSCLOSE", "PROMPT_COMMAND", "FCEDIT",
];

/// [`sensitive_var`]'s reason for variables that move the working folder behind the
/// classifier's back (`CDPATH`, `DIRSTACK` + `popd`): every later path is misjudged.
pub(crate) const CHANGES_CWD: &str = "which changes where cd, pushd and popd go";

/// [`sensitive_var`]'s reason for variables that make bash itself run code.
pub(crate) const RUNS_CODE: &str = "which can make the shell run code";

/// Environment variables whose value changes what later commands load or run.
pub(crate) fn sensitive_var(name: &str, value: &str) -> Option<&'static str> {
    const LOADERS: &[&str] = &[
        "PAGER", "MANPAGER", "EDITOR", "VISUAL", "BROWSER", "SUDO_ASKPASS", "SSH_ASKPASS",
        "RIPGREP_CONFIG_PATH", "GREP_OPTIONS", "TAR_OPTIONS", "NODE_OPTIONS", "NODE_PATH",
        "RUSTC_WRAPPER", "RUSTC", "CC", "CXX", "MAKEFLAGS", "OPENSSL_CONF", "CURL_HOME", "WGETRC",
        "HISTFILE", "_JAVA_OPTIONS", "JAVA_TOOL_OPTIONS", "GREP", "GZIP", "MAGIC", "GCONV_PATH",
        "LOCPATH", "NLSPATH", "HOSTALIASES", "TERMINFO", "TERMINFO_DIRS", "TZDIR",
    ];
    const LOADER_PREFIXES: &[&str] = &[
        "LD_", "DYLD_", "GIT_", "PYTHON", "PERL", "RUBY", "BASH_FUNC_", "NPM_CONFIG_",
        "npm_config_", "CARGO_", "SSH_", "LESS",
    ];
    match name {
        "PAGER" | "GIT_PAGER" | "MANPAGER" if value.is_empty() || value == "cat" => None,
        "PATH" => Some("which changes which programs run"),
        "IFS" => Some("which changes how words are split"),
        "CDPATH" | "DIRSTACK" => Some(CHANGES_CWD),
        "HOME" | "XDG_CONFIG_HOME" | "XDG_DATA_HOME" | "ZDOTDIR" | "INPUTRC" | "GNUPGHOME" => {
            Some("which changes which configuration files programs load")
        }
        "BASH_ENV" | "ENV" | "PROMPT_COMMAND" | "PS4" | "SHELLOPTS" | "BASHOPTS" | "EXECIGNORE"
        | "BASH_CMDS" | "BASH_ALIASES" | "BASH_LOADABLES_PATH" | "BASH_XTRACEFD"
        | "POSIXLY_CORRECT" => {
            Some(RUNS_CODE)
        }
        n if LOADERS.contains(&n) || LOADER_PREFIXES.iter().any(|p| n.starts_with(p)) => {
            Some("which changes what programs load or run")
        }
        _ => None,
    }
}

/// Variables a command may expand without a question: the shell's own and the everyday
/// environment. Any other one may hold a secret (`GITHUB_TOKEN`, `AWS_SECRET_ACCESS_KEY`), and
/// printing it sends it to the model — the reason `env` and `printenv` ask.
pub(crate) fn harmless_var(name: &str) -> bool {
    const NAMES: &[&str] = &[
        "HOME", "PWD", "OLDPWD", "USER", "LOGNAME", "PATH", "LANG", "LANGUAGE", "SHELL", "TERM",
        "TMPDIR", "HOSTNAME", "HOSTTYPE", "OSTYPE", "MACHTYPE", "UID", "EUID", "PPID", "GROUPS",
        "RANDOM", "SRANDOM", "SECONDS", "EPOCHSECONDS", "EPOCHREALTIME", "LINENO", "BASHPID",
        "BASH_VERSION", "BASH_VERSINFO", "BASH_SOURCE", "BASH_REMATCH", "FUNCNAME", "PIPESTATUS",
        "IFS", "COLUMNS", "LINES", "SHLVL", "TZ", "REPLY", "OPTIND", "OPTARG", "DIRSTACK",
        "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME",
    ];
    // Positional and special parameters: `$1`, `$@`, `$?`, `$$`...
    name.bytes().all(|b| b.is_ascii_digit())
        || matches!(name, "@" | "*" | "#" | "?" | "-" | "$" | "!" | "_")
        || name.starts_with("LC_")
        || NAMES.contains(&name)
}
