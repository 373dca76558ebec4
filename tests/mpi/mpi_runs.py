#!/usr/bin/env python3
"""`generate` and `verify --db` under mpirun end with the database one process writes.

    mpi_runs.py MPIRUN GENERATE VERIFY WORKDIR CASE

CASE is one of:
  np1, np2, np4      generate then verify at -np N; the rules (canonical text,
                     variables, constraints, note, id) and the verification
                     outcomes (status, axioms, counterexample, note) equal the
                     single-process programs' (proof_ms and the runs table aside).
  resume             generate and verify stopped early at -np 2 (--stop-after:
                     exit 130, what was committed stays), then run again at -np 2:
                     the same database as one process.
  sigint             a Ctrl-C (SIGINT to mpirun) during verify at -np 2 (of a larger
                     space, each rule refuted on 1,000 random inputs first, to
                     keep it busy): mpirun passes it on to every rank (as
                     SIGTERM), rank 0 commits what is finished and reports the
                     interruption, the rest stays 'candidate'; Open MPI's mpirun
                     then exits 1 for the job it ended. Running again finishes
                     it with the single-process outcome.
Prints one line per check; exits 1 on the first difference.
"""
import os
import signal
import sqlite3
import subprocess
import sys
import time

MPIRUN, GENERATE, VERIFY, WORK, CASE = sys.argv[1:6]
WORK = os.path.join(WORK, CASE)  # each case builds its own reference, so that cases may run in parallel
SPACE = ["--max-ops", "2"]
VERIFY_ARGS = []
if CASE == "sigint":
    SPACE = ["--max-ops", "3", "--ops", "matmul,add,transpose,relu,mul,concat"]  # 623 rules
    VERIFY_ARGS = ["--refute-trials", "1000"]


def mpirun(np, *args):
    cmd = [MPIRUN, "--oversubscribe", "-np", str(np)]
    if os.getuid() == 0:
        cmd.append("--allow-run-as-root")
    return cmd + [str(a) for a in args]


def run(cmd, expect=0):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != expect:
        sys.exit(f"FAIL: {' '.join(cmd)}: exit {r.returncode}, expected {expect}\n{r.stdout}")
    return r.stdout


def rows(db, columns):
    with sqlite3.connect(db) as c:
        return c.execute(f"SELECT id, {columns} FROM rules ORDER BY id").fetchall()


RULE = "canonical, variables, constraints, generator_run IS NOT NULL, kind"
OUTCOME = "canonical, status, axioms, counterexample, note"


def started(db):
    """Whether a verify run is recorded in the database (it has begun)."""
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=0.1) as c:
            return c.execute("SELECT COUNT(*) FROM runs WHERE kind = 'verify'").fetchone()[0] > 0
    except sqlite3.Error:  # locked while rank 0 writes: not yet
        return False


def same(what, got, want):
    if got != want:
        diff = next((g, w) for g, w in zip(got + [None] * len(want), want + [None] * len(got)) if g != w)
        sys.exit(f"FAIL: {what}: {len(got)} rows, {len(want)} expected; first difference:\n  got  {diff[0]}\n  want {diff[1]}")
    print(f"ok: {what} ({len(got)} rules)")


def fresh(name):
    path = os.path.join(WORK, name)
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    return path


def reference():
    """The single-process databases: after generate, and after verify."""
    gen, ver = fresh("one.db"), fresh("one.verified.db")
    run([GENERATE, "--db", gen, *SPACE, "--no-progress"])
    with sqlite3.connect(gen) as src, sqlite3.connect(ver) as dst:
        src.backup(dst)
    run([VERIFY, "--db", ver, "--no-progress", *VERIFY_ARGS])
    return rows(gen, RULE + ", note"), rows(ver, OUTCOME)


def main():
    os.makedirs(WORK, exist_ok=True)
    want_rules, want_outcomes = reference()
    if CASE in ("np1", "np2", "np4"):
        np = int(CASE[2:])
        db = fresh(f"np{np}.db")
        out = run(mpirun(np, GENERATE, "--db", db, *SPACE, "--no-progress"))
        if np > 1 and f"{np} ranks" not in out:
            sys.exit(f"FAIL: generate does not report {np} ranks:\n{out}")
        same(f"generate -np {np}: rules", rows(db, RULE + ", note"), want_rules)
        run(mpirun(np, VERIFY, "--db", db, "--no-progress"))
        same(f"verify -np {np}: outcomes", rows(db, OUTCOME), want_outcomes)
    elif CASE == "resume":
        db = fresh("resume.db")
        out = run(mpirun(2, GENERATE, "--db", db, *SPACE, "--no-progress", "--stop-after", 30), expect=130)
        if len(rows(db, "canonical")) != 30:
            sys.exit("FAIL: an interrupted generate did not leave 30 rules committed")
        out = run(mpirun(2, GENERATE, "--db", db, *SPACE, "--no-progress"))
        if "(30 before this invocation)" not in out:
            sys.exit(f"FAIL: generate did not resume after the 30 stored rules:\n{out}")
        same("generate -np 2 stopped and resumed: rules", rows(db, RULE + ", note"), want_rules)
        out = run(mpirun(2, VERIFY, "--db", db, "--no-progress", "--stop-after", 20), expect=130)
        statuses = [r[1] for r in rows(db, "status")]
        if statuses.count("candidate") != len(statuses) - 20:
            sys.exit(f"FAIL: an interrupted verify did not leave 20 rules done:\n{out}")
        run(mpirun(2, VERIFY, "--db", db, "--no-progress"))
        same("verify -np 2 stopped and resumed: outcomes", rows(db, OUTCOME), want_outcomes)
    elif CASE == "sigint":
        db = fresh("sigint.db")
        run(mpirun(2, GENERATE, "--db", db, *SPACE, "--no-progress"))
        # Refuting each rule on many random inputs first keeps verify busy
        # long enough to be interrupted.
        p = subprocess.Popen(mpirun(2, VERIFY, "--db", db, "--no-progress", *VERIFY_ARGS),
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        # Ctrl-C during the first batch (512 of the 623 rules at -np 2, about
        # 1.3 s on an idle machine, longer on a loaded one): half a second
        # after verify recorded its run. A fixed wait from the start raced an
        # idle machine, which had finished every rule within the 5 s this
        # test used to wait.
        while p.poll() is None and not started(db):
            time.sleep(0.02)
        time.sleep(0.5)
        p.send_signal(signal.SIGINT)
        out, _ = p.communicate()
        if p.returncode == 0 or "interrupted: " not in out:
            sys.exit(f"FAIL: mpirun verify after Ctrl-C: exit {p.returncode}, expected rank 0's report of the "
                     f"interruption and a non-zero exit\n{out}")
        statuses = [r[1] for r in rows(db, "status")]
        if "candidate" not in statuses or len(set(statuses) - {"candidate"}) == 0:
            sys.exit(f"FAIL: after Ctrl-C, expected some rules done and some still 'candidate': {set(statuses)}\n{out}")
        print(f"ok: Ctrl-C: mpirun exit {p.returncode}, {len(statuses) - statuses.count('candidate')} rules committed, "
              f"{statuses.count('candidate')} left")
        run(mpirun(2, VERIFY, "--db", db, "--no-progress", *VERIFY_ARGS))
        same("verify -np 2 after Ctrl-C, run again: outcomes", rows(db, OUTCOME), want_outcomes)
    else:
        sys.exit(f"unknown case {CASE}")


main()
