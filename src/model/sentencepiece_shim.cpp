// sentencepiece_shim.cpp — wraps libsentencepiece's C++ SentencePieceProcessor in the C
// functions of sentencepiece_shim.h; no C++ exception or type crosses the boundary.
#include "sentencepiece_shim.h"

#include <sentencepiece_processor.h>

#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

struct ec_sp {
    sentencepiece::SentencePieceProcessor proc;
};

extern "C" ec_sp *ec_sp_open(const char *path, char *err, size_t err_len)
{
    ec_sp *sp = new (std::nothrow) ec_sp;
    if (!sp) {
        snprintf(err, err_len, "out of memory");
        return nullptr;
    }
    try {
        auto status = sp->proc.Load(path);
        if (!status.ok()) {
            snprintf(err, err_len, "%s", status.ToString().c_str());
            delete sp;
            return nullptr;
        }
    } catch (...) {
        snprintf(err, err_len, "cannot load");
        delete sp;
        return nullptr;
    }
    return sp;
}

extern "C" void ec_sp_free(ec_sp *sp) { delete sp; }

extern "C" int ec_sp_encode(const ec_sp *sp, const char *text, size_t len, int **ids)
{
    *ids = nullptr;
    try {
        std::vector<int> out;
        if (!sp->proc.Encode(std::string(text, len), &out).ok()) return -1;
        *ids = static_cast<int *>(malloc((out.size() + 1) * sizeof(int)));
        if (!*ids) return -1;
        if (!out.empty()) memcpy(*ids, out.data(), out.size() * sizeof(int));
        return static_cast<int>(out.size());
    } catch (...) {
        return -1;
    }
}

extern "C" char *ec_sp_decode(const ec_sp *sp, const int *ids, int n)
{
    try {
        std::string text;
        if (!sp->proc.Decode(std::vector<int>(ids, ids + n), &text).ok()) return nullptr;
        return strdup(text.c_str());
    } catch (...) {
        return nullptr;
    }
}

extern "C" const char *ec_sp_piece(const ec_sp *sp, int id) { return sp->proc.IdToPiece(id).c_str(); }

extern "C" int ec_sp_find(const ec_sp *sp, const char *piece)
{
    int id = sp->proc.PieceToId(piece);
    return sp->proc.IsUnknown(id) && sp->proc.IdToPiece(id) != piece ? -1 : id;
}

extern "C" int ec_sp_size(const ec_sp *sp) { return sp->proc.GetPieceSize(); }
extern "C" int ec_sp_bos(const ec_sp *sp) { return sp->proc.bos_id(); }
extern "C" int ec_sp_eos(const ec_sp *sp) { return sp->proc.eos_id(); }
extern "C" int ec_sp_is_control(const ec_sp *sp, int id)
{
    return sp->proc.IsControl(id) || sp->proc.IsUnknown(id);
}
