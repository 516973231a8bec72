"""Realistic tool output for the flowctx API and hook tests."""

from __future__ import annotations


def failing_pytest_run(passed: int = 300) -> str:
    """A verbose pytest run: many passes, two failures with tracebacks, a summary."""
    lines = [
        "============================= test session starts ==============================",
        "platform linux -- Python 3.11.7, pytest-8.3.4, pluggy-1.5.0",
        "rootdir: /home/bob/acme",
        f"collected {passed + 2} items",
        "",
    ]
    for n in range(passed):
        lines.append(
            f"tests/test_billing.py::test_invoice_total[{n}] PASSED{'':>20}[{n % 100:3d}%]"
        )
    lines.append("tests/test_billing.py::test_refund_rounding FAILED")
    lines.append("tests/test_sync.py::TestSync::test_retry_backoff FAILED")
    lines += [
        "",
        "=================================== FAILURES ===================================",
        "____________________________ test_refund_rounding ______________________________",
        "",
        "    def test_refund_rounding():",
        "        invoice = make_invoice(total=Decimal('10.005'))",
        ">       assert refund(invoice) == Decimal('10.01')",
        "E       AssertionError: assert Decimal('10.00') == Decimal('10.01')",
        "",
        "tests/test_billing.py:88: AssertionError",
        "_________________________ TestSync.test_retry_backoff __________________________",
        "",
        "self = <tests.test_sync.TestSync object at 0x7f3a2c1d0e50>",
        "",
        "    def test_retry_backoff(self):",
        ">       delays = list(backoff(attempts=4))",
        "",
        "acme/sync.py:41: in backoff",
        "    yield base * 2 ** n / jitter",
        "E   ZeroDivisionError: division by zero",
        "",
        "tests/test_sync.py:17: ZeroDivisionError",
        "=========================== short test summary info ============================",
        "FAILED tests/test_billing.py::test_refund_rounding - AssertionError: assert Decimal('10.00') == Decimal('10.01')",
        "FAILED tests/test_sync.py::TestSync::test_retry_backoff - ZeroDivisionError: division by zero",
        f"========================= 2 failed, {passed} passed in 4.21s =========================",
    ]
    return "\n".join(lines) + "\n"


FAILING_TEST_IDS = (
    "tests/test_billing.py::test_refund_rounding",
    "tests/test_sync.py::TestSync::test_retry_backoff",
)
