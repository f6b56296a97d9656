"""Native stderr (fd 2) capture: a helper process between fd 2 and wherever it went before.

* :mod:`cudnn_magic.capture.helper` - the helper process (stdlib only).
* :mod:`cudnn_magic.capture.tee` - the kernel side: :class:`~cudnn_magic.capture.tee.Tee`
  (install, :meth:`~Tee.sync`, :meth:`~Tee.mark`/:meth:`~Tee.changed_since`,
  :meth:`~Tee.slice`, :meth:`~Tee.uninstall`), :func:`~cudnn_magic.capture.tee.record_key`,
  :func:`~cudnn_magic.capture.tee.records_root`, :func:`~cudnn_magic.capture.tee.read_slice`.

The on-disk record (for the crash-forensics feature)::

    <records_root()>/<key>/<time_ns>-<kernel pid>/      0o700
        meta.json          0o600  written by the helper only (atomic replace of a temporary file
                           created O_EXCL|O_NOFOLLOW, removed when it cannot be written):
                           version, key, kernel_pid, helper_pid, guardian_pid, started (epoch
                           s), clean_exit, exit_kind ("exit" | "uninstall"), kernel_exited,
                           ended, last_cell {n, source (first 8,084 bytes of UTF-8), offset, t,
                           seq}, offset (log bytes so far), forwarded, spilled, dropped, skipped
                           (bytes), max_bytes, segment_bytes, memory_bytes, spool_bytes,
                           log_error, spool_error, meta_error, shell, python. Refreshed at most
                           every 2 s while the kernel lives, and when it goes.
        fd2.<offset>.log   0o600  the last 2-4 MiB of fd-2 bytes; <offset> (12 digits) is the
                           log offset of the segment's first byte
        state              0o600  8 KiB shared with the kernel, allocated at install: the helper's
                           counters, the kernel's clean-exit flag (``helper.read_clean_flag``;
                           it lands even on a full disk) and current-cell record
                           (``helper.read_cell_record(bytes)``; there even if the helper was
                           killed)
        (spool)            0o600  the helper's spool file: created O_EXCL|O_NOFOLLOW and unlinked
                           at once, so it is never seen and goes away with the helper
        faulthandler.log   0o600  the Python stack at a fatal signal (``faulthandler`` writes it;
                           :mod:`cudnn_magic.engines.crash` opens and moves it here)
        shown              0o600  created atomically once the crash report was shown (never twice)
    <records_root()>/<key>/connection                the connection file this key belongs to
    <records_root()>/<key>/faulthandler-<pid>.pending   faulthandler's file until the record exists

Every file is created ``O_EXCL | O_NOFOLLOW`` (never through a link planted there). A kernel
that died shows as ``clean_exit: false`` (and no clean-exit flag in ``state``) with
``kernel_exited`` set (or a dead ``kernel_pid``); ``last_cell.offset`` is where that cell's
bytes start in the log. When such a kernel dies, the helper also repeats the last 8 KiB of the log on the real stderr (the
server log), prefixed ``[cudnn-magic] kernel pid N ended without a clean exit``.

Importing this package imports nothing else.
"""
