"""perf: what this machine allows (`probe`), parsing its output (`parse`), and the recorder that
samples a running session's hot symbols and counters (`recorder`, driving `record`, its
`windows` and `stat` through `control`).  Everything here drives the real `perf` binary
(linux-perf).
"""
