"""Native stderr (fd 2) capture: a helper process between fd 2 and wherever it went before.

* :mod:`cudnn_magic.capture.helper` - the helper process (stdlib only).
* :mod:`cudnn_magic.capture.tee` - the kernel side: :class:`~cudnn_magic.capture.tee.Tee`
  (install, :meth:`~Tee.sync`, :meth:`~Tee.mark`/:meth:`~Tee.changed_since`,
  :meth:`~Tee.slice`, :meth:`~Tee.uninstall`), :func:`~cudnn_magic.capture.tee.record_key`,
  :func:`~cudnn_magic.capture.tee.records_root`, :func:`~cudnn_magic.capture.tee.read_slice`.

The on-disk record (for the crash-forensics feature)::

    <records_root()>/<key>/<time_ns>-<kernel pid>/      0o700
        meta.json          0o600  written by the helper only (atomic replace):
                           version, key, kernel_pid, helper_pid, started (epoch s), clean_exit,
                           exit_kind ("exit" | "uninstall"), kernel_exited, ended,
                           last_cell {n, source (<= 3,000 chars), offset, t}, offset (log bytes
                           so far), forwarded, dropped, max_bytes, segment_bytes, log_error,
                           shell, python
        fd2.<offset>.log   0o600  the last 2-4 MiB of fd-2 bytes; <offset> (12 digits) is the
                           log offset of the segment's first byte
        state              0o600  64 bytes shared with the kernel (counters)

A kernel that died shows as ``clean_exit: false`` with ``kernel_exited`` set (or a dead
``kernel_pid``); ``last_cell.offset`` is where that cell's bytes start in the log. When such a
kernel dies, the helper also repeats the last 8 KiB of the log on the real stderr (the
server log), prefixed ``[cudnn-magic] kernel pid N ended without a clean exit``.

Importing this package imports nothing else.
"""
