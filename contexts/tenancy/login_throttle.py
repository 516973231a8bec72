"""The answer to a locked-out dashboard login (django-axes' AXES_LOCKOUT_CALLABLE).

Axes counts the failed logins of each (username, address) pair; past
`MEMFLOW_LOGIN_FAILURES` it refuses that pair, the right password too, and
hands the request here. The login page comes back (429, with Retry-After)
saying when to try again: the last counted failure plus the cool-off, a time
that further tries do not move (AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT).
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import Any

from axes.helpers import get_client_username, get_cool_off
from axes.models import AccessAttempt
from django.conf import settings
from django.contrib.auth.forms import AuthenticationForm
from django.db.models import Max
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone


def locked_until(request: HttpRequest, username: str) -> datetime:
    """When the lockout of this username from this request's address ends."""
    cool_off = get_cool_off(request) or timedelta(seconds=settings.MEMFLOW_LOGIN_COOLOFF_S)
    last = AccessAttempt.objects.filter(
        username=username, ip_address=getattr(request, "axes_ip_address", None)
    ).aggregate(last=Max("attempt_time"))["last"]
    return (last or timezone.now()) + cool_off


def lockout_response(
    request: HttpRequest, original_response: HttpResponse | None, credentials: Any
) -> HttpResponse:
    username = get_client_username(request, credentials) or ""
    until = locked_until(request, username)
    wait = max(1, math.ceil((until - timezone.now()).total_seconds()))
    context = {
        "form": AuthenticationForm(request, initial={"username": username}),
        "next": request.POST.get("next", "") if request.method == "POST" else "",
        "locked_until": until,
        "locked_minutes": math.ceil(wait / 60),
    }
    response = render(request, "registration/login.html", context, status=429)
    response["Retry-After"] = str(wait)
    return response
