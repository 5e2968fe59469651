#!/bin/sh
# A backend that writes more than 4 KiB of non-ASCII UTF-8, raw bytes (\377, a lone
# continuation byte, a cut-off sequence) and control characters to stderr, then fails.
i=0
while [ $i -lt 400 ]; do
  printf 'žluťoučký kůň — 日本語 ' >&2
  i=$((i + 1))
done
printf '\377\376 raw \200 bytes \033[31m escape \001\002 nul-less \342\202 end\n' >&2
exit 1
