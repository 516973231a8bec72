"""The inputs the projection bench's commands run over, written into its workdir:
a small pytest project with real bugs, a C build with errors, a Python tree that
does not compile, and a program that logs (see `corpus`)."""

from __future__ import annotations

import shutil
import sysconfig
import textwrap
from pathlib import Path

SITE_PACKAGES = Path(sysconfig.get_paths()["purelib"])


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")


def _write_pytest_project(root: Path) -> None:
    """A small project with real bugs: its failures are what pytest really prints."""
    _write(root / "pytest.ini", "[pytest]\naddopts = -p no:randomly\n")
    _write(root / "conftest.py", "")
    _write(
        root / "calc.py",
        '''
        """A calculator with a few real bugs."""

        def add(a, b):
            return a + b

        def mean(values):
            return sum(values) / len(values)

        def parse_price(text):
            amount = text.strip().lstrip("$")
            return round(float(amount.replace(",", "")), 2)

        def percent(part, whole):
            # bug: integer division
            return part * 100 // whole

        def slugify(title):
            return "-".join(title.lower().split())

        def inventory(items):
            totals = {}
            for name, count in items:
                totals[name] = count  # bug: overwrites instead of adding
            return totals

        def chunks(values, size):
            return [values[i : i + size] for i in range(0, len(values) - size, size)]  # bug: drops the tail
        ''',
    )
    _write(root / "test_calc.py", _TEST_CALC)
    _write(root / "test_many.py", _TEST_MANY)
    _write(
        root / "test_broken.py",
        "import calc\nfrom calc import does_not_exist\n\n\ndef test_never_runs():\n    assert does_not_exist()\n",
    )
    _write(root / "test_unit.py", _TEST_UNIT)


_TEST_CALC = """
    import logging
    import warnings

    import pytest

    import calc

    log = logging.getLogger("calc.tests")


    def test_add():
        assert calc.add(2, 3) == 5


    def test_mean():
        assert calc.mean([1, 2, 3, 4]) == 2.5


    def test_mean_of_nothing():
        assert calc.mean([]) == 0


    @pytest.mark.parametrize(
        "text, expected",
        [("$1,200.50", 1200.5), ("3.14159", 3.14), ("$0.10", 0.1), ("12,5", 12.5), (" 7 ", 7.0)],
    )
    def test_parse_price(text, expected):
        assert calc.parse_price(text) == expected


    @pytest.mark.parametrize("part, whole, expected", [(1, 2, 50), (1, 3, 33.33), (2, 8, 25)])
    def test_percent(part, whole, expected):
        assert calc.percent(part, whole) == pytest.approx(expected, abs=0.01)


    def test_slugify():
        assert calc.slugify("Hello  World") == "hello-world"


    def test_inventory_adds_counts():
        for step in range(200):
            print(f"step {step}: restocking shelf {step % 7} with {step * 3} items")
            log.warning("shelf %d low on stock (%d left)", step % 7, step % 5)
        totals = calc.inventory([("apple", 3), ("pear", 2), ("apple", 4)])
        assert totals == {"apple": 7, "pear": 2}


    def test_chunks_keep_every_value():
        values = list(range(10))
        assert sum(calc.chunks(values, 3), []) == values


    def test_report_lines():
        expected = [f"line {i}: ok" for i in range(40)]
        actual = [f"line {i}: ok" for i in range(40)]
        actual[17] = "line 17: FAILED"
        assert actual == expected


    def test_config_file(tmp_path):
        path = tmp_path / "settings.toml"
        with open(path) as handle:
            assert handle.read()


    @pytest.fixture
    def database():
        raise RuntimeError("could not connect to database at 127.0.0.1:5432")


    def test_uses_database(database):
        assert database


    def test_deprecated_helper():
        warnings.warn("calc.add is deprecated, use calc.plus", DeprecationWarning)
        assert calc.add(1, 1) == 2


    @pytest.mark.skip(reason="needs network")
    def test_exchange_rates():
        pass


    @pytest.mark.xfail(reason="rounding is not fixed yet")
    def test_rounding():
        assert calc.parse_price("0.005") == 0.01
"""

_TEST_MANY = """
    import pytest

    import calc


    @pytest.mark.parametrize("a", range(15))
    @pytest.mark.parametrize("b", range(12))
    def test_add_commutes(a, b):
        assert calc.add(a, b) == calc.add(b, a)


    @pytest.mark.parametrize("word", ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"] * 5)
    def test_slug_of_one_word(word):
        assert calc.slugify(word) == word
"""

_TEST_UNIT = """
    import unittest

    import calc


    class CalcTest(unittest.TestCase):
        def test_add(self):
            self.assertEqual(calc.add(2, 2), 4)

        def test_percent(self):
            self.assertAlmostEqual(calc.percent(1, 3), 33.33, places=2)

        def test_inventory(self):
            self.assertDictEqual(calc.inventory([("a", 1), ("a", 2)]), {"a": 3})

        def test_mean_empty(self):
            self.assertEqual(calc.mean([]), 0)


    class ParseTest(unittest.TestCase):
        def test_prices(self):
            for number in range(60):
                with self.subTest(number=number):
                    self.assertEqual(calc.parse_price(f"${number}.50"), number + 0.5)

        def test_percent_of_seven(self):
            for number in range(1, 25):
                with self.subTest(number=number):
                    self.assertAlmostEqual(calc.percent(number, 7), number * 100 / 7, places=1)

        def test_comma_decimal(self):
            self.assertEqual(calc.parse_price("12,5"), 12.5)

        def test_slugs(self):
            for number in range(80):
                self.assertEqual(calc.slugify(f"Item {number}"), f"item-{number}")


    if __name__ == "__main__":
        unittest.main()
"""


def _write_build_project(root: Path) -> None:
    """C sources with real warnings and one real error, and a Makefile building them."""
    functions = []
    for number in range(40):
        functions.append(
            f"int compute_{number}(int value, int unused_{number}) {{\n"
            f"    int scratch_{number};\n"
            f"    unsigned int limit = {number * 7};\n"
            f"    if (value < limit) return value * {number};\n"
            f'    printf("%s\\n", value);\n'
            f"}}\n"
        )
    source = "#include <stdio.h>\n\n" + "\n".join(functions)
    source += "\nint main(void) {\n    return compute_1(2, 3) + missing_symbol;\n}\n"
    _write(root / "gen.c", source)
    _write(
        root / "util.c",
        '#include <string.h>\n\nint length(const char *s) {\n    int n = strlen(s);\n    char buffer[4];\n    sprintf(buffer, "%d", n);\n}\n',
    )
    _write(root / "ok.c", "int ok(void) { return 0; }\n")
    _write(
        root / "Makefile",
        "CFLAGS = -Wall -Wextra -O2\n\nall: ok.o util.o gen.o\n\n%.o: %.c\n\t$(CC) $(CFLAGS) -c $< -o $@\n",
    )


def _write_compile_tree(root: Path) -> None:
    """A copy of a real package's sources, plus two files that do not compile."""
    if not root.exists():
        source = SITE_PACKAGES / "rest_framework"
        if source.exists():
            shutil.copytree(source, root / "rest_framework", ignore=_not_python)
    _write(
        root / "broken/settings_bad.py",
        "DEBUG = True\nALLOWED_HOSTS = [\n    'localhost',\n\ndef oops(:\n    pass\n",
    )
    _write(root / "broken/indent_bad.py", "def f():\n    return 1\n      return 2\n")


def _not_python(directory: str, names: list[str]) -> list[str]:
    def wanted(name: str) -> bool:
        return name.endswith(".py") or (Path(directory) / name).is_dir()

    return [name for name in names if name == "__pycache__" or not wanted(name)]


def _write_log_program(root: Path) -> None:
    """A small service that logs what services log: requests with varying numbers, a few
    warnings and errors, and (with --tracebacks) exceptions logged with their traceback."""
    _write(root / "app.py", _LOG_PROGRAM)


_LOG_PROGRAM = """
    import logging
    import random
    import sys

    logging.basicConfig(
        stream=sys.stdout,
        level=logging.DEBUG,
        format="%(asctime)s.%(msecs)03d %(levelname)-8s %(name)s: %(message)s",
        datefmt="%Y-%m-%d %H:%M:%S",
    )
    random.seed(7)
    web, db, jobs = (logging.getLogger(name) for name in ("web", "db", "jobs"))
    count = int(sys.argv[1])
    tracebacks = "--tracebacks" in sys.argv
    paths = ["/api/items", "/api/users", "/health", "/api/orders", "/static/app.js"]


    def charge(order):
        if order % 97 == 0:
            raise ValueError(f"order {order} has a negative total")
        return order


    web.info("listening on 0.0.0.0:8080 with %d workers", 4)
    for step in range(count):
        roll = random.random()
        path = random.choice(paths)
        if roll < 0.55:
            web.info("GET %s/%d 200 in %dms", path, random.randint(1, 999), random.randint(1, 80))
        elif roll < 0.75:
            db.debug("query took %dms rows=%d", random.randint(1, 40), random.randint(0, 500))
        elif roll < 0.9:
            jobs.info("job %d finished in %.2fs", step, random.random() * 3)
        elif roll < 0.97:
            web.info("POST /api/orders 201 in %dms", random.randint(5, 120))
        elif roll < 0.985:
            db.warning("slow query: %dms on table orders (limit 200ms)", random.randint(200, 900))
        elif roll < 0.993:
            web.warning("client %d.%d.%d.%d sent an oversized header", 10, 0, step % 256, 7)
        elif roll < 0.998:
            jobs.error("job %d failed: upstream returned 503, retry %d of 3", step, step % 3 + 1)
        elif tracebacks:
            try:
                charge(97 * (step + 1))
            except ValueError:
                jobs.exception("charging order failed")
        else:
            db.error("connection to replica db-%d lost; failing over", step % 3)
    web.critical("shutting down after %d requests: disk full on /var/lib/app", count)
"""
