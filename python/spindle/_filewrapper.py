"""wsgi.file_wrapper (PEP 3333): an iterable over a file; spindle sends a
wrapped regular file with sendfile instead of iterating it."""


class FileWrapper:
    def __init__(self, filelike, blksize=8192):
        self.filelike = filelike
        self.blksize = blksize
        if hasattr(filelike, "close"):
            self.close = filelike.close

    def __iter__(self):
        return self

    def __next__(self):
        data = self.filelike.read(self.blksize)
        if data:
            return data
        raise StopIteration
