from __future__ import annotations

from django.urls import path

from skills import views

urlpatterns = [
    path("w/<slug:slug>/skills/", views.skill_list, name="skill-list"),
    path("w/<slug:slug>/skills/export/", views.skill_export, name="skill-export"),
]
