//===- TokenFile.h - Training data as token ids ----------------*- C++ -*-===//
//
// rp-run trains on a flat sequence of token ids read from one file:
//  - a token file in the llm.c format (karpathy/llm.c, dev/data/data_common.py
//    write_datafile; the format of its GPT-2 and Llama-3 FineWeb / TinyShakespeare shards):
//    a header of 256 little-endian int32 (1024 bytes): [0] magic, [1] version, [2] token
//    count; then the tokens, little-endian. Magic 20240520 version 1: uint16 tokens (GPT-2);
//    magic 20240801 version 7: uint32 tokens (Llama 3). Magic 20240520 version 2 (uint32),
//    which rpc wrote before it followed llm.c's Llama-3 header, is read too;
//  - a masked token file (rpc's supervised fine-tuning data, examples/data/prepare_sft.py): the
//    llm.c header layout with [0] magic 20251126, [1] version (1: uint16 tokens, 2: uint32),
//    [2] token count, [3] mask count (equal to the token count); then the tokens,
//    little-endian; then one loss-mask byte per token: 1 = the token is trained as a label (a
//    response token), 0 = it is not (a prompt token; its label becomes the loss's
//    ignore_index, BatchSampler.h);
//  - a packed token file (supervised fine-tuning data packed into rows, prepare_sft.py
//    --seq): the masked token file's header with [1] version 3 (uint16 tokens and positions) or
//    4 (uint32), [2] token count, [3] mask count, [4] position count (all three equal),
//    [5] row length S (the token count is a whole number of rows), [6] eval rows (the last
//    rows hold the held-out examples; 0: none); then the tokens, then one loss-mask byte per
//    token, then one position per token (the token's index within its document, restarting
//    at 0 where a document starts; every row starts a document, and within a row each
//    position is 0 or the previous one plus 1). Versions 1 and 2 read as before;
//    a reader that knows only those refuses versions 3 and 4 by their number;
//  - nanoGPT's train.bin / val.bin (data/*/prepare.py): headerless little-endian uint16 ids
//    (--data-format nanogpt; never guessed);
//  - raw text read as byte-level tokens: each byte is one token id 0..255 (a model with a
//    byte vocabulary).
//
//   RP_ASSIGN_OR_RETURN(TokenData data, readTokens(path, DataFormat::Auto));
//   RP_RETURN_IF_ERROR(checkVocabulary(data, vocabSize));
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_DATA_TOKENFILE_H
#define RP_RUNTIME_DATA_TOKENFILE_H

#include "base/Status.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rp::runtime {

/// How to read a data file. Auto: a file that starts with the llm.c magic is a token file;
/// otherwise a name ending in ".txt" is text; anything else is an error.
enum class DataFormat { Auto, Tokens, Text, NanoGpt };

/// The llm.c token-file magic (header word 0) of uint16 files (version 1).
inline constexpr int32_t kTokenFileMagic = 20240520;
/// The llm.c token-file magic of uint32 files (version 7, Llama 3).
inline constexpr int32_t kTokenFileMagicU32 = 20240801;
/// The masked token file's magic (header word 0; file comment).
inline constexpr int32_t kMaskedTokenFileMagic = 20251126;
/// Size of the llm.c token-file header in bytes (256 int32).
inline constexpr int64_t kTokenFileHeaderBytes = 1024;

/// The tokens of one data file.
struct TokenData {
  std::string path;             ///< The file read (for messages).
  DataFormat format;            ///< Tokens or Text (never Auto).
  int tokenBytes;               ///< 2 or 4 (llm.c uint16 / uint32; nanoGPT 2); 1 for text.
  std::vector<uint32_t> tokens; ///< Every token id, in file order.
  /// Masked token files: one 0/1 byte per token (1: trained as a label). Empty: every token
  /// is trained.
  std::vector<uint8_t> lossMask;
  /// Packed token files: each token's position in its document (0 where one starts). Empty
  /// for the other formats.
  std::vector<uint32_t> positions = {};
  /// Packed token files: the row length S (tokens = rows x S); 0 for the other formats.
  int64_t rowLength = 0;
  /// Packed token files: how many of the last rows are held out for evaluation.
  int64_t evalRows = 0;

  /// Whether the file packs documents into rows (positions and rowLength are set).
  bool packed() const { return rowLength > 0; }
};

/// "auto", "tokens", "text", "nanogpt".
const char *dataFormatName(DataFormat format);

/// Parses "auto", "tokens", "text" or "nanogpt" (the values of rp-run --data-format).
/// Errors: InvalidArgument naming the text and the accepted names.
StatusOr<DataFormat> parseDataFormat(std::string_view name);

/// Reads an llm.c token file (format above). Every size is checked against the file size
/// before anything is allocated.
/// Errors, each naming the file: NotFound (no such file); Unavailable (cannot open or read);
/// InvalidArgument (not a regular file, bad magic, unknown version); DataLoss (shorter than
/// the 1024-byte header, negative token count, token count disagreeing with the file size).
StatusOr<TokenData> readTokenFile(const std::string &path);

/// Reads a masked token file (format above): tokens and lossMask; with versions 3 and 4 (a
/// packed token file) also positions, rowLength and evalRows. Sizes are checked against the
/// file size before anything is allocated.
/// Errors, each naming the file: NotFound; Unavailable; InvalidArgument (not a regular file,
/// bad magic, unknown version, a mask byte other than 0 or 1, naming its position); DataLoss
/// (shorter than the header, a negative count, a mask or position count other than the token
/// count, a file size disagreeing with the counts: truncated or trailing bytes; packed: a row
/// length below 1 or not dividing the token count, eval rows outside [0, rows], a row not
/// starting at position 0 or a position that is neither 0 nor the previous one plus 1, naming
/// its index).
StatusOr<TokenData> readMaskedTokenFile(const std::string &path);

/// Reads a file as byte tokens: token i is byte i (0..255); tokenBytes is 1.
/// Errors: NotFound, Unavailable, InvalidArgument (not a regular file, or an empty file),
/// each naming the file.
StatusOr<TokenData> readTextFile(const std::string &path);

/// Reads a nanoGPT token file: headerless little-endian uint16 ids; tokenBytes is 2.
/// Errors: NotFound, Unavailable, InvalidArgument (not a regular file, empty), DataLoss (an
/// odd byte count), each naming the file.
StatusOr<TokenData> readNanoGptFile(const std::string &path);

/// Reads `path` in `format`. Auto and Tokens: a file starting with the masked magic is a masked
/// token file. Auto: a file starting with an llm.c magic is a token file; a
/// name ending in ".txt" is text; any other file is InvalidArgument "FILE: not a token file
/// (no llm.c header, magic 20240520 or 20240801); pass --data-format text to read raw text as
/// byte tokens, or --data-format nanogpt for nanoGPT's headerless uint16 train.bin".
/// Errors: those of readTokenFile / readTextFile.
StatusOr<TokenData> readTokens(const std::string &path, DataFormat format);

/// Writes `tokens` as an llm.c token file (tokenBytes 2: magic 20240520 version 1, uint16
/// tokens; 4: magic 20240801 version 7, uint32 tokens) atomically (writeFileAtomic: a temporary
/// file, fsync, rename). Errors: InvalidArgument when tokenBytes is not 2 or 4, a token does not
/// fit in tokenBytes (naming its position and value), or there are more than 2^31 - 1 tokens (the
/// header count is an int32); those of writeFileAtomic.
Status writeTokenFile(const std::string &path, const std::vector<uint32_t> &tokens,
                      int tokenBytes);

/// Writes a masked token file (tokenBytes 2: version 1; 4: version 2) atomically.
/// Errors: those of writeTokenFile; InvalidArgument when mask has another length than tokens
/// or holds a byte other than 0 or 1.
Status writeMaskedTokenFile(const std::string &path, const std::vector<uint32_t> &tokens,
                            const std::vector<uint8_t> &mask, int tokenBytes);

/// Writes a packed token file (tokenBytes 2: version 3; 4: version 4) atomically: `tokens`,
/// their 0/1 `mask` and `positions` (each one per token), rows of `rowLength` tokens of which
/// the last `evalRows` are held out. Errors: those of writeMaskedTokenFile; InvalidArgument when
/// positions has another length than tokens, rowLength < 1 or does not divide the token count,
/// evalRows is outside [0, rows], a position does not fit in tokenBytes, or the positions break
/// the rules of the file comment (naming the index).
Status writePackedTokenFile(const std::string &path, const std::vector<uint32_t> &tokens,
                            const std::vector<uint8_t> &mask,
                            const std::vector<uint32_t> &positions, int64_t rowLength,
                            int64_t evalRows, int tokenBytes);

/// Checks every token id against the model's vocabulary.
/// Errors: InvalidArgument when vocabSize < 1, or naming file, position and value of the
/// first token >= vocabSize: "FILE: token 50001 at position 1234 is >= the model's
/// vocabulary size 48" (for text data a hint about byte tokens follows).
Status checkVocabulary(const TokenData &data, int64_t vocabSize);

} // namespace rp::runtime

#endif // RP_RUNTIME_DATA_TOKENFILE_H
