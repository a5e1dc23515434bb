# Sourced (POSIX sh) by scripts/demo.sh and by the VM test scripts/vm-tests.d/20-demo.sh, so the
# test runs exactly the demo's command and writes exactly the demo's files.
#   demo_command OUT [EXTRA...]   prints the demo's gdr-write-bw command writing into OUT
#   demo_header OUT COMMAND MACHINE   writes OUT/write_bw.txt's opening lines
# DEMO_ITERATIONS (default 100) is -n: the VM test sets a smaller one to keep the suite short.

demo_command() {
    out=$1; shift
    echo "gdr-write-bw --loopback -a -n ${DEMO_ITERATIONS:-100} -t 64 -Q 8 --validate --csv $out/write_bw.csv --json $out/write_bw.json $*"
}

# The binary's own console header names the git commit and the command it was built from and
# run with; these lines add what it cannot know (how the demo ran it, on what).
demo_header() {
    {
        echo "# command: $2"
        echo "# machine: $3"
        echo "# date:    $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    } >"$1/write_bw.txt"
}
