"""Media uploads (multipart): images, audio, video. Size-limited; the file name is only a label."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, File, Form, Request, UploadFile

from omnimem.contract import MAX_IMAGE_BYTES
from omnimem.server.auth import Principal, state_of, writer
from omnimem.server.errors import ERROR_RESPONSES
from omnimem.server.models import AddResultBody
from omnimem.server.routes.common import acting, memory_of
from omnimem.server.uploads import saved

router = APIRouter(prefix="/v1", tags=["media"], responses=ERROR_RESPONSES)


@router.post("/images", status_code=201, response_model=AddResultBody)
def add_image(
    request: Request, file: UploadFile = File(...), caption: str | None = Form(None), time: str | None = Form(None),
    source_id: str | None = Form(None), user_id: str | None = Form(None), agent_id: str | None = Form(None),
    session_id: str | None = Form(None), principal: Principal = Depends(writer),
) -> dict[str, Any]:
    """Remember an image (``Memory.add_image``); its bytes go to the cold tier."""
    scope = principal.scope(user_id, agent_id, session_id)
    with saved(file, min(MAX_IMAGE_BYTES, state_of(request).max_upload)) as source, acting(principal):
        return memory_of(request).add_image(source, caption, time=time, source_id=source_id, **scope).to_dict()


@router.post("/audio", status_code=201)
def add_audio(
    request: Request, file: UploadFile = File(...), time: str | None = Form(None), user_id: str | None = Form(None),
    agent_id: str | None = Form(None), session_id: str | None = Form(None), principal: Principal = Depends(writer),
) -> dict[str, Any]:
    """Remember the speech in a recording (``Memory.add_audio``): one unit per segment."""
    scope = principal.scope(user_id, agent_id, session_id)
    with saved(file, state_of(request).max_upload) as source, acting(principal):
        return memory_of(request).add_audio(source, time=time, **scope).to_dict()


@router.post("/videos", status_code=201)
def add_video(
    request: Request, file: UploadFile = File(...), time: str | None = Form(None), fps: float = Form(1.0),
    max_frames: int = Form(200), user_id: str | None = Form(None), agent_id: str | None = Form(None),
    session_id: str | None = Form(None), principal: Principal = Depends(writer),
) -> dict[str, Any]:
    """Remember a video: an event unit, its scene-change frames and its speech (``Memory.add_video``)."""
    scope = principal.scope(user_id, agent_id, session_id)
    with saved(file, state_of(request).max_upload) as source, acting(principal):
        return memory_of(request).add_video(source, time=time, fps=fps, max_frames=max_frames, **scope).to_dict()
