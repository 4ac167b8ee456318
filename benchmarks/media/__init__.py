"""Media: the media filters (scene cuts, VAD, transcription, storage) against generated ground truth."""
