"""Reading facts out of a Git patch (pure: no repository, no database)."""

from powercontext.evidence.diff import parse_patch
from powercontext.memory.git_adapter import FactChange, fact_changes, rewrite

PATCH = '''diff --git a/.env b/.env
index 1111111..2222222 100644
--- a/.env
+++ b/.env
@@ -1,3 +1,3 @@
 APP=demo
-DB_PORT=5432
+DB_PORT=6432
 DEBUG=true
diff --git a/Makefile b/Makefile
index 3333333..4444444 100644
--- a/Makefile
+++ b/Makefile
@@ -1,6 +1,6 @@
-docs-test:
+test-docs:
 \tuv run pytest docs
-lint:
-\truff check .
+lint: fmt
+\truff check --fix .
diff --git "a/conf/caf\\303\\251.json" "b/conf/caf\\303\\251.json"
--- "a/conf/caf\\303\\251.json"
+++ "b/conf/caf\\303\\251.json"
@@ -1,4 +1,4 @@
 {
-  "port": 8080,
-  "debug": false
+  "port": 9090,
+  "debug": true
 }
diff --git a/old.toml b/old.toml
deleted file mode 100644
--- a/old.toml
+++ /dev/null
@@ -1 +0,0 @@
-port = 1
'''


def test_files_and_blocks_are_read_from_the_patch():
    files = parse_patch(PATCH)
    assert [(f.path, f.deleted, len(f.blocks)) for f in files] == [
        (".env", False, 1), ("Makefile", False, 2), ("conf/café.json", False, 1), ("old.toml", True, 1)]
    assert files[1].blocks[1].removed == ("lint:", "\truff check .")
    assert files[1].blocks[1].added == ("lint: fmt", "\truff check --fix .")


def test_changed_values_and_renamed_targets_are_facts_unchanged_or_removed_ones_are_not():
    facts = [f for file in parse_patch(PATCH) for f in fact_changes(file)]
    assert [(f.path, f.fact, f.old, f.new) for f in facts] == [
        (".env", "DB_PORT", "5432", "6432"),
        ("Makefile", "Makefile target", "docs-test", "test-docs"),
        ("conf/café.json", "port", "8080", "9090"),  # debug false→true is too uninformative to match prose
    ]


def test_rewrite_replaces_one_whole_token_only():
    port = FactChange(".env", "DB_PORT", "5432", "6432", (("5432", "6432", False),))
    assert rewrite("Postgres listens on 5432 in dev.", port) == "Postgres listens on 6432 in dev."
    assert rewrite("Postgres listens on 54321 in dev.", port) is None  # part of another number
    assert rewrite("Version 5432.1 of the schema.", port) is None  # part of a version
    assert rewrite("5432 or 5432?", port) is None  # stated twice: ambiguous, left alone
    backend = FactChange("pyproject.toml", "build-backend", "hatchling.build", "setuptools.build_meta",
                         (("hatchling.build", "setuptools.build_meta", False), ("Hatchling", "setuptools", True)))
    assert rewrite("Built with hatchling.", backend) == "Built with setuptools."
    assert rewrite("Build backend: hatchling.build (from pyproject.toml).", backend) == (
        "Build backend: setuptools.build_meta (from pyproject.toml).")
