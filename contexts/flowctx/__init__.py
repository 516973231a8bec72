"""flowctx: working memory for long sessions (seed 003).

Recent work stays verbatim, nearby history is compressed reversibly
(`projection`), older history folds into engineer handoff notes (`notes`,
`llm`). The pure parts live here; models, services and the API live in the
`contexts` app proper.
"""
