"""Round loops. ``experiment`` prepares (no TF); ``tff_runner`` trains through TFF."""
