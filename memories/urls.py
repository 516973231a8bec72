from __future__ import annotations

from django.urls import path

from memories import views

urlpatterns = [
    path("w/<slug:slug>/memories/", views.memory_list, name="memory-list"),
    path("w/<slug:slug>/core/", views.core_detail, name="core-detail"),
]
