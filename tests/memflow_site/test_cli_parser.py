"""The `memflow` command line parses: several apps add subcommands and options
to one parser, and a clash breaks every command, hooks included."""

from __future__ import annotations

from memflow_site.cli.main import build_parser


def test_the_bench_options_parse_for_each_bench() -> None:
    parser = build_parser()
    quality = parser.parse_args(
        ["bench", "quality", "--corpus", "data/set", "--size", "1500,6000", "--path", "both"]
    )
    assert (quality.corpus, quality.size, quality.path) == ("data/set", [1500, 6000], "both")
    capture = parser.parse_args(["bench", "capture", "--size", "2000", "--queries", "100"])
    assert (capture.size, capture.queries, capture.corpus) == ([2000], 100, None)
