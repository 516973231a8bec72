"""The Chinese quality corpus: Debian's zh_CN descriptions, parsed and labelled."""

# Chinese text keeps its own full-width punctuation.
# ruff: noqa: RUF001

from __future__ import annotations

from pathlib import Path

from memories.bench import corpus

INDEX = """Package: 0ad
Description-md5: d943033bedada21853d2ae54a2578a7b
Description-zh_CN: 古代战争实时策略游戏
 0 A.D. (发音"zero ey-dee") ，是一个自由、开源、跨平台的
 古代战争实时策略游戏。简而言之，它是一款基于历史的战争/经
 济游戏。

Package: 9menu
Description-md5: 33212022c95de2da6fad4458526c39d8
Description-zh_CN: 用 Shell 脚本做窗口菜单
 这是一个允许你从 Shell 创建 X 菜单的简单程序，这里每个菜单项将会运行一个命
 令。9menu 本来用于 9wm，但是也可以用于其他窗口管理器。
 .
 它读取 ~/.9menurc 中的配置。

Package: untranslated
Description-md5: 00000000000000000000000000000000
Description-zh_CN: A tool
 A tool that nobody translated.
"""


def test_wrapped_chinese_lines_join_without_a_space():
    packages = list(corpus.parse_translations(INDEX, "zh_CN"))
    assert [p.name for p in packages] == ["0ad", "9menu", "untranslated"]
    first = packages[0].paragraphs[0]
    assert "跨平台的古代战争" in first and "战争/经济游戏" in first
    assert "从 Shell 创建 X 菜单" in packages[1].paragraphs[0]
    assert "运行一个命令。9menu 本来用于 9wm" in packages[1].paragraphs[0]
    assert packages[1].paragraphs[1] == "它读取 ~/.9menurc 中的配置。"


def test_docs_and_labelled_queries():
    docs = corpus.build_docs_zh(list(corpus.parse_translations(INDEX, "zh_CN")))
    assert [d.key for d in docs] == ["0ad", "9menu"]  # the untranslated one has no Chinese
    assert docs[1].text.startswith("9menu: 这是一个允许你从 Shell 创建 X 菜单")
    queries = corpus.build_queries_zh(docs, per_kind=5)
    kinds = {q.kind for q in queries}
    assert kinds == {"question", "identifier", "fragment"}
    for query in queries:
        assert query.answers
        if query.kind == "fragment":
            assert corpus._CJK_RUN.fullmatch(query.query) and 6 <= len(query.query) <= 12
            assert all(query.query in d.text for d in docs if d.key in query.answers)
        if query.kind == "question":
            # A synopsis the description already holds is no question: 0ad's is skipped.
            assert (query.query, query.answers) == ("用 Shell 脚本做窗口菜单", {"9menu"})


def test_the_index_is_found_under_apts_quoted_file_name(tmp_path: Path):
    lists = corpus.lists_dir(tmp_path, "zh_CN")
    assert lists.name == "apt-lists-zh_CN"  # apt drops other languages' indexes from a folder
    lists.mkdir(parents=True)
    index = lists / "deb.debian.org_debian_dists_bookworm_main_i18n_Translation-zh%5fCN.lz4"
    index.write_bytes(b"")
    assert corpus._translation_files(lists, "zh_CN") == [index]
    assert corpus.lists_dir(tmp_path).name == "apt-lists"
