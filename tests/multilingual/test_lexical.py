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
    # Joined identifiers stay whole as written; their word parts are stemmed.
    for term in ("test2::plugin::memusage", "memusag", "mem", "usag"):
        assert term in terms
    query = lexical.parse_query("检查 pg_hba.conf")
    assert query.terms == ["检查", "pg_hba.conf", "pg", "hba", "conf"]
    assert query.identifiers == ["pg_hba.conf"]


def test_english_words_are_stemmed_so_other_forms_meet():
    # The stem, and the form as written beside it where the two differ.
    assert lexical.tokenize("Retries Webhooks") == ["retri", "=retries", "webhook", "=webhooks"]
    stems = [t for t in lexical.tokenize("retry retries retrying retried") if t[0] != "="]
    assert set(stems) == {"retri"}
    assert lexical.tokenize("connect connects") == ["connect", "connect", "=connects"]
    # A written form is no extra length: BM25 normalises by words.
    assert lexical.term_frequencies("retries retries curl") == (
        {"retri": 2, "=retries": 2, "curl": 1},
        3,
    )
    # Identifiers keep their written form whole: only plain words are stemmed.
    assert lexical.tokenize("--retry-all-errors")[0] == "retry-all-errors"
    assert "curlopt_xferinfodata" in lexical.tokenize("CURLOPT_XFERINFODATA")
    # A query remembers how it wrote each term, for people to read.
    query = lexical.parse_query("payment retries")
    assert query.terms == ["payment", "retri", "=retries"]
    assert [query.written[t] for t in query.terms] == ["payment", "retries", "retries"]


def test_english_is_lower_cased_words_and_full_width_is_folded():
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
