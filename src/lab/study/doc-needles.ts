// Needles for a documentation model (pydoc-6.8m writes CPython docs): a reStructuredText-style passage with no
// module names of its own, a made-up module name planted at depth, and a cue where the model must copy it.
export const DOC_NEEDLES = {
  story:
    'This section describes how files are opened, read and closed. ' +
    'A file object is returned by the built-in function that opens a path. ' +
    'The mode argument is a string that says whether the file is read or written. ' +
    'In text mode, the contents are returned as strings, decoded with the given encoding. ' +
    'In binary mode, the contents are returned as bytes objects without any decoding. ' +
    'When a file is no longer needed, it should be closed to release the resources it holds. ' +
    'The recommended way is the :keyword:`with` statement, which closes the file even if an exception is raised. ' +
    'Reading a whole file at once can use a lot of memory when the file is large. ' +
    'Instead, a file object can be iterated over, which returns one line at a time. ' +
    'Each line includes the trailing newline character, except possibly the last one. ' +
    'The method that writes a string returns the number of characters written. ' +
    'Writing to a file that was opened for reading raises an exception. ' +
    'The current position in the file can be changed with the method that seeks to an offset. ' +
    'In text mode, only offsets returned by the method that tells the position are meaningful. ' +
    'Buffering is used by default, so data may not be written to disk until the buffer is flushed. ' +
    'The flush method writes the buffered data without closing the file. ' +
    'A line buffered file flushes its buffer whenever a newline is written. ' +
    'When the encoding is not given, a platform dependent default is used. ' +
    'It is good practice to always give the encoding explicitly when working with text files. ' +
    'Errors during decoding are handled according to the errors argument. ' +
    'The default is to raise an exception, but invalid bytes can also be replaced or ignored. ' +
    'Newlines are translated when reading and writing in text mode. ' +
    'The newline argument controls how this translation is done. ' +
    'Temporary files are created in a directory chosen by the platform. ' +
    'They are removed automatically when they are closed. ' +
    'Directories are created and removed with separate functions. ' +
    'Listing the contents of a directory returns the names of the entries in arbitrary order. ' +
    'The names do not include the special entries for the directory itself and its parent. ' +
    'Paths can be joined, split and normalized with the functions described below. ' +
    'A relative path is interpreted relative to the current working directory. ' +
    'The current working directory can be changed while the program runs. ' +
    'File permissions are checked when a file is opened, not when it is read. ' +
    'An exception is raised if the file does not exist or cannot be opened. ' +
    'The exception carries the error number and a message that describes the error. ' +
    'Programs that handle many files should be careful to close every one of them. ',
  names: ['zorblax', 'quibfile', 'marvek', 'tikopath', 'bexlib', 'florpio', 'zibcache', 'nuxread'],
  plant: 'The configuration is read by the module {name}. The module {name} is imported first.',
  cue: 'The configuration is read by the module',
  after: '.',
};
