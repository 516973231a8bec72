"""The lexical arm's tokens: CJK bigrams, ASCII words, identifiers whole and in parts."""

# Chinese text keeps its own full-width punctuation.
# ruff: noqa: RUF001

from __future__ import annotations

from memories import lexical


def test_chinese_becomes_bigrams_with_unigrams_in_documents_only():
    assert lexical.tokenize("数据库连接", cjk_unigrams=False) == ["数据", "据库", "库连", "连接"]
    document = lexical.tokenize("数据库连接")
    assert {"数据", "连接", "数", "接"} <= set(document)
    assert lexical.parse_query("连接").terms == ["连接"]
    # A one-character query can only match a unigram.
    assert lexical.parse_query("库").terms == ["库"]


def test_mixed_text_keeps_identifiers_whole_and_split():
    terms = lexical.tokenize("失败时先检查pg_hba.conf配置Test2::Plugin::MemUsage")
    for term in ("失败", "检查", "配置", "pg_hba.conf", "pg", "hba", "conf"):
        assert term in terms
    for term in ("test2::plugin::memusage", "memusage", "mem", "usage"):
        assert term in terms
    query = lexical.parse_query("检查 pg_hba.conf")
    assert query.terms == ["检查", "pg_hba.conf", "pg", "hba", "conf"]
    assert query.identifiers == ["pg_hba.conf"]


def test_english_is_lower_cased_words_and_full_width_is_folded():
    assert lexical.tokenize("Retries Webhooks") == ["retries", "webhooks"]
    assert lexical.tokenize("ＴｙｐｅＳｃｒｉｐｔ 严格模式") == [
        "typescript",
        "type",
        "script",
        "严格",
        "格模",
        "模式",
        "严",
        "格",
        "模",
        "式",
    ]
    # Japanese kana and Korean hangul are bigrammed like Chinese.
    assert "ログ" in lexical.tokenize("ログ設定")
    assert "설정" in lexical.tokenize("로그 설정")
