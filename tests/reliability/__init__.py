"""Reliability and security battery: crashes, locks, full disks, bad files, fuzzing, models."""
