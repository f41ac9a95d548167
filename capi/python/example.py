"""A script written for the original pydablooms: python3 example.py [FILE]"""
import sys

import pydablooms

path = sys.argv[1] if len(sys.argv) > 1 else "/tmp/example.bin"
print("pydablooms", pydablooms.__version__)
bloom = pydablooms.Dablooms(capacity=1000, error_rate=.01, filepath=path)
for row_id, link in enumerate(["http://spam.example/a", "http://spam.example/b", "http://spam.example/c"], 100):
    bloom.add(link, row_id)
bloom.delete("http://spam.example/b", 101)
bloom.flush()
print("mem_seqnum %d, disk_seqnum %d" % (bloom.mem_seqnum(), bloom.disk_seqnum()))
del bloom

bloom = pydablooms.load_dabloom(capacity=1000, error_rate=.01, filepath=path)
for link in ["http://spam.example/a", "http://spam.example/b", "http://spam.example/c"]:
    print("%s: %s" % (link, "maybe spam" if link in bloom else "not spam"))
