#!/usr/bin/env python3
"""Names from the input in the exported files (core/docs/export.md, "Names in
the exported files"), checked with the languages' own parsers.

    check_names.py PASE CONFIG_JSON

For each hostile name (a line break and Python, a carriage return, quotes,
TOML brackets, a terminal escape, NUL, bytes that are not UTF-8, a
backslash, the shell's expansions), PASE plans the config CONFIG_JSON in a
folder of that name, and the config imported as a pase-graph document whose
name and loss layer carry it, and emits the JAX program, the Megatron-LM
arguments and the torchtitan TOML (a folder cannot hold NUL; a document
cannot hold bytes that are not UTF-8). Each file must be UTF-8 with no
control character but the line feed, and beside the same export of a plain
name: the JAX program parses (ast) to the same code, its JSON literal reads
back the name, and `plan.py --help` runs without JAX and prints nothing
injected; the TOML reads (tomllib) to the same tables; the Megatron-LM
arguments pass `bash -n`, differ only in comment lines and, run by bash
(with a `torchrun` that only exits first on its PATH: the real one, where
PyTorch is installed, spends a second starting to fail), touch nothing. Needs Python 3.11 (tomllib) and bash. Exits 1 on a failure.
"""
import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib

HOSTILE = [
    b'evil\nimport os; os.system("echo PWNED") #',
    b"a\rb",
    b"'",
    b'"',
    b'"""',
    b"'''",
    b"]]\n[training]\nsteps = 1\n#",
    b"\x1b]0;x\x07",
    b"a\x00b",
    b"\xff\xfe",
    b"back\\slash\\",
    b"$(touch pwned)",
    b"`touch pwned`",
]
TARGETS = ["jax", "megatron", "torchtitan"]
CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f]")
# What `echo PWNED` prints, if the name runs: the line alone (--help shows
# the name itself, the command's text among it).
RAN = re.compile(rb"^PWNED$", re.M)
FAILURES = []


def fail(where, message):
    FAILURES.append("%s: %s" % (where, message))


def run(args, cwd=None, env=None):
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, timeout=120)


# The environment the Megatron-LM script runs in: a folder whose `torchrun`
# exits at once, first on the PATH (main() makes it).
STUB_ENV = None


def emit(pase, graph, sizes, target, out):
    """The export of `graph` (a path) to `target`, as bytes; `sizes`: a
    config's batch and sequence flags (a document has its own)."""
    r = run([pase, "plan", "--graph", graph, "--procs", "8", "--preset", "h100"] + sizes +
            ["--emit", target, "-o", out])
    if r.returncode != 0:
        return None, r.stderr.decode(errors="replace").strip()
    with open(out, "rb") as f:
        return f.read(), ""


def plan_literal(tree):
    """The PLAN = json.loads(r\"\"\"...\"\"\") node's string, and the tree with it blanked."""
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and getattr(node.targets[0], "id", None) == "PLAN"):
            arg = node.value.args[0]
            text = arg.value
            arg.value = ""
            return text
    return None


def check_text(where, data):
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        fail(where, "not UTF-8 (%s)" % e)
        return None
    m = CONTROL.search(text)
    if m:
        fail(where, "a control character %r at %d" % (m.group(), m.start()))
    return text


def check_jax(where, text, plain, name, path, cwd):
    try:
        tree = ast.parse(text)
    except SyntaxError as e:
        fail(where, "does not parse: %s" % e)
        return
    plain_tree = ast.parse(plain)
    literal = plan_literal(tree)
    plan_literal(plain_tree)
    if literal is None:
        fail(where, "no PLAN literal")
        return
    if ast.dump(tree) != ast.dump(plain_tree):
        fail(where, "its code is not the plain name's")
    data = json.loads(literal)
    shown = name.decode("utf-8", errors="replace")
    if data["graph"] != shown:
        fail(where, "PLAN graph %r, not %r" % (data["graph"], shown))
    # Runs as far as its options, which need no JAX, and prints the name.
    r = run([sys.executable, path, "--help"], cwd=cwd)
    out = r.stdout + r.stderr
    if r.returncode != 0:
        fail(where, "plan.py --help failed: %s" % out.decode(errors="replace")[-400:])
    if RAN.search(out):
        fail(where, "plan.py --help ran the name")


def check_megatron(where, text, plain, path, cwd):
    r = run(["bash", "-n", path])
    if r.returncode != 0:
        fail(where, "bash -n: %s" % r.stderr.decode(errors="replace"))
    lines, plains = text.split("\n"), plain.split("\n")
    if len(lines) != len(plains):
        fail(where, "%d lines, the plain name's %d" % (len(lines), len(plains)))
    else:
        for i, (a, b) in enumerate(zip(lines, plains)):
            if a != b and not a.startswith("#"):
                fail(where, "line %d is not a comment: %r" % (i + 1, a))
    # Run, its arguments are a failed command; the comments do nothing.
    r = run(["bash", path], cwd=cwd, env=STUB_ENV)
    if RAN.search(r.stdout + r.stderr):
        fail(where, "bash ran the name")


def check_torchtitan(where, text, plain):
    try:
        tables = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        fail(where, "does not read: %s" % e)
        return
    if tables != tomllib.loads(plain):
        fail(where, "its tables are not the plain name's: %r" % tables)


def main():
    pase, config = sys.argv[1], sys.argv[2]
    top = tempfile.mkdtemp(prefix="pase-names-")
    global STUB_ENV
    try:
        stubs = os.path.join(top, "stubs")
        os.makedirs(stubs)
        with open(os.path.join(stubs, "torchrun"), "w") as f:
            f.write("#!/bin/sh\nexit 1\n")
        os.chmod(os.path.join(stubs, "torchrun"), 0o755)
        STUB_ENV = dict(os.environ, PATH=stubs + os.pathsep + os.environ.get("PATH", ""))
        r = run([pase, "import", config, "--batch", "8", "--seq", "64"])
        if r.returncode != 0:
            raise RuntimeError("pase import failed: " + r.stderr.decode(errors="replace"))
        document = json.loads(r.stdout)

        def folder_graph(name):
            folder = os.path.join(os.fsencode(top), b"folders", name)
            os.makedirs(folder)
            shutil.copy(config, os.path.join(folder, b"config.json"))
            return os.path.join(folder, b"config.json")

        def document_graph(name, index):
            text = name.decode("utf-8")
            doc = json.loads(json.dumps(document))
            doc["name"] = text
            renamed = [layer for layer in doc["layers"] if layer["name"] == "loss"]
            if len(renamed) != 1:
                raise RuntimeError("the imported document has no loss layer")
            renamed[0]["name"] = text
            path = os.path.join(top, "doc%d.json" % index)
            with open(path, "w") as f:
                json.dump(doc, f)
            return path

        cases = [("plain folder", b"plain", folder_graph(b"plain"), True),
                 ("plain document", b"plain", document_graph(b"plain", 0), False)]
        for i, name in enumerate(HOSTILE):
            if b"\x00" not in name:
                cases.append(("folder %r" % name, name, folder_graph(name), True))
            try:
                name.decode("utf-8")
                cases.append(("document %r" % name, name, document_graph(name, i + 1), False))
            except UnicodeDecodeError:
                pass

        plain = {}
        for k, (where, name, graph, in_folder) in enumerate(cases):
            sizes = ["--batch", "8", "--seq", "64"] if in_folder else []
            cwd = os.path.join(top, "run%d" % k)
            os.makedirs(cwd)
            for target in TARGETS:
                path = os.path.join(cwd, {"jax": "plan.py", "megatron": "megatron_args.sh",
                                          "torchtitan": "torchtitan.toml"}[target])
                at = "%s, %s" % (where, target)
                data, error = emit(pase, graph, sizes, target, path)
                if data is None:
                    fail(at, "pase plan --emit failed: " + error)
                    continue
                text = check_text(at, data)
                if name == b"plain":
                    plain[(in_folder, target)] = text
                    continue
                if text is None:
                    continue
                base = plain[(in_folder, target)]
                if target == "jax":
                    check_jax(at, text, base, name, path, cwd)
                elif target == "megatron":
                    check_megatron(at, text, base, path, cwd)
                else:
                    check_torchtitan(at, text, base)
            if os.path.exists(os.path.join(cwd, "pwned")):
                fail(where, "a command in the name ran")
        checked = len(cases) - 2
    finally:
        shutil.rmtree(top, ignore_errors=True)
    for f in FAILURES:
        print("FAIL " + f)
    if FAILURES:
        return 1
    print("names: %d hostile names, %d in a folder's and a document's graph, x %d targets: "
          "they parse and run nothing injected" % (len(HOSTILE), checked, len(TARGETS)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
