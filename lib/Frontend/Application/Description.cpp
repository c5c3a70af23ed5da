//===- Description.cpp - The .nvapp application description parser ------===//
//
// A line-oriented front end for application descriptions (docs/
// applications.md): the application's name, its NetPEs and the NetIL file
// of each, sources, sinks and connections. The NetIL files are assembled
// by the NetIL front end into the one application; every error is an MLIR
// diagnostic at its file:line:col.
//
//===----------------------------------------------------------------------===//

#include "netvm/Frontend/Application.h"
#include "netvm/Frontend/NetIL.h"

#include "NetVM/NetVMOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;
using namespace netvm;
using namespace netvm::application;
using llvm::SMLoc;

static std::string stemOf(StringRef path) {
  std::string stem = llvm::sys::path::stem(path).str();
  return stem.empty() || stem == "-" ? "app" : stem;
}

namespace {
/// A line-oriented parser for application descriptions:
///
///   # comment
///   application NAME
///   pe NAME = "file.netil"
///   source NAME[, NAME...]
///   sink NAME[, NAME...]
///   FROM -> TO          (endpoints: a source/sink NAME or PE.PORT)
class DescriptionParser {
public:
  DescriptionParser(MLIRContext &context, llvm::SourceMgr &sourceMgr,
                    unsigned bufferId, FileLoader loadFile)
      : context(context), sourceMgr(sourceMgr), bufferId(bufferId),
        loadFile(loadFile) {}

  OwningOpRef<ModuleOp> parse(StringRef appName);

private:
  struct Token {
    enum Kind { Word, String, Arrow, Equal, Dot, Comma, End, Bad } kind;
    StringRef text;
    SMLoc loc;
  };
  struct Endpoint {
    std::string node, port;
    SMLoc loc;
  };

  Location loc(SMLoc pos) const {
    auto [line, col] = sourceMgr.getLineAndColumn(pos, bufferId);
    return FileLineColLoc::get(
        &context, sourceMgr.getMemoryBuffer(bufferId)->getBufferIdentifier(),
        line, col);
  }
  InFlightDiagnostic error(SMLoc pos) {
    failed = true;
    return emitError(loc(pos));
  }
  std::vector<Token> lex(StringRef line);
  bool parseEndpoint(ArrayRef<Token> toks, size_t &i, Endpoint &ep);

  MLIRContext &context;
  llvm::SourceMgr &sourceMgr;
  unsigned bufferId;
  FileLoader loadFile;
  bool failed = false;
};
} // namespace

std::vector<DescriptionParser::Token> DescriptionParser::lex(StringRef line) {
  std::vector<Token> toks;
  size_t i = 0;
  while (i < line.size()) {
    char c = line[i];
    SMLoc at = SMLoc::getFromPointer(line.data() + i);
    if (c == ' ' || c == '\t' || c == '\r') {
      ++i;
      continue;
    }
    if (c == '#' || c == ';')
      break;
    if (llvm::isAlnum(c) || c == '_') {
      size_t j = i;
      while (j < line.size() && (llvm::isAlnum(line[j]) || line[j] == '_'))
        ++j;
      toks.push_back({Token::Word, line.slice(i, j), at});
      i = j;
      continue;
    }
    if (c == '"') {
      size_t j = line.find('"', i + 1);
      if (j == StringRef::npos) {
        toks.push_back({Token::Bad, line.substr(i), at});
        error(at) << "string is not closed before the end of the line";
        return toks;
      }
      toks.push_back({Token::String, line.slice(i + 1, j), at});
      i = j + 1;
      continue;
    }
    if (line.substr(i).starts_with("->")) {
      toks.push_back({Token::Arrow, line.substr(i, 2), at});
      i += 2;
      continue;
    }
    Token::Kind kind = c == '='   ? Token::Equal
                       : c == '.' ? Token::Dot
                       : c == ',' ? Token::Comma
                                  : Token::Bad;
    if (line.substr(i).starts_with("=>")) {
      toks.push_back({Token::Bad, line.substr(i, 2), at});
      error(at) << "connections are written with '->', not '=>'";
      return toks;
    }
    toks.push_back({kind, line.substr(i, 1), at});
    if (kind == Token::Bad) {
      error(at) << "unexpected character '" << c << "'";
      return toks; // one error per line
    }
    ++i;
  }
  toks.push_back({Token::End, line.substr(line.size()),
                  SMLoc::getFromPointer(line.end())});
  return toks;
}

bool DescriptionParser::parseEndpoint(ArrayRef<Token> toks, size_t &i,
                                      Endpoint &ep) {
  if (toks[i].kind != Token::Word) {
    error(toks[i].loc) << "expected an endpoint (NAME or PE.PORT)";
    return false;
  }
  ep.node = toks[i].text.str();
  ep.loc = toks[i].loc;
  ++i;
  if (toks[i].kind == Token::Dot) {
    ++i;
    if (toks[i].kind != Token::Word) {
      error(toks[i].loc) << "expected a port name after '.'";
      return false;
    }
    ep.port = toks[i].text.str();
    ++i;
  }
  return true;
}

OwningOpRef<ModuleOp> DescriptionParser::parse(StringRef appName) {
  const llvm::MemoryBuffer *buffer = sourceMgr.getMemoryBuffer(bufferId);
  StringRef text = buffer->getBuffer();
  StringRef path = buffer->getBufferIdentifier();
  Location fileLoc = FileLineColLoc::get(&context, path, 1, 1);
  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  OpBuilder builder(&context);
  builder.setInsertionPointToEnd(module->getBody());
  auto app = ApplicationOp::create(
      builder, fileLoc, appName.empty() ? stemOf(path) : appName.str());
  bool named = !appName.empty();

  struct PEDecl {
    std::string name, file;
    SMLoc loc, fileLoc;
  };
  std::vector<PEDecl> peDecls;
  std::vector<std::pair<std::string, SMLoc>> sources, sinks;
  std::vector<std::pair<Endpoint, Endpoint>> connections;
  llvm::StringMap<SMLoc> names;
  auto declare = [&](const std::string &name, SMLoc at) {
    auto [it, inserted] = names.try_emplace(name, at);
    if (!inserted) {
      auto diag = error(at) << "'" << name << "' is declared twice";
      diag.attachNote(loc(it->second)) << "first declaration here";
    }
    return inserted;
  };

  SmallVector<StringRef> lines;
  text.split(lines, '\n');
  for (StringRef line : lines) {
    std::vector<Token> toks = lex(line);
    if (toks.front().kind == Token::End)
      continue;
    // The lexer has reported what is wrong with the line.
    if (toks.back().kind != Token::End)
      continue;
    const Token &first = toks.front();
    size_t i = 1;
    if (first.kind == Token::Word && first.text == "application") {
      if (toks[1].kind != Token::Word) {
        error(toks[1].loc) << "expected an application name";
        continue;
      }
      if (!named)
        app.setSymName(toks[1].text);
      i = 2;
    } else if (first.kind == Token::Word && first.text == "pe") {
      PEDecl decl;
      if (toks[1].kind != Token::Word) {
        error(toks[1].loc) << "expected a NetPE name after 'pe'";
        continue;
      }
      decl.name = toks[1].text.str();
      decl.loc = toks[1].loc;
      i = 2;
      if (toks[i].kind == Token::Equal)
        ++i;
      if (toks[i].kind != Token::String) {
        error(toks[i].loc) << "expected the NetIL file of NetPE '" << decl.name
                           << "' as a quoted path";
        continue;
      }
      decl.file = toks[i].text.str();
      decl.fileLoc = toks[i].loc;
      ++i;
      if (declare(decl.name, decl.loc))
        peDecls.push_back(std::move(decl));
    } else if (first.kind == Token::Word &&
               (first.text == "source" || first.text == "sink")) {
      auto &list = first.text == "source" ? sources : sinks;
      while (true) {
        if (toks[i].kind != Token::Word) {
          error(toks[i].loc) << "expected a " << first.text << " name";
          break;
        }
        if (declare(toks[i].text.str(), toks[i].loc))
          list.emplace_back(toks[i].text.str(), toks[i].loc);
        ++i;
        if (toks[i].kind != Token::Comma)
          break;
        ++i;
      }
    } else {
      Endpoint from, to;
      i = 0;
      if (!parseEndpoint(toks, i, from))
        continue;
      if (toks[i].kind != Token::Arrow) {
        error(toks[i].loc) << "expected '->' (or a line starting with "
                              "application, pe, source or sink)";
        continue;
      }
      ++i;
      if (!parseEndpoint(toks, i, to))
        continue;
      connections.emplace_back(std::move(from), std::move(to));
    }
    if (toks[i].kind != Token::End)
      error(toks[i].loc) << "unexpected '" << toks[i].text << "'";
  }
  if (failed)
    return nullptr;

  builder.setInsertionPointToEnd(app.getBodyBlock());
  for (auto &[name, at] : sources)
    SourceOp::create(builder, loc(at), name);
  for (auto &[name, at] : sinks)
    SinkOp::create(builder, loc(at), name);
  StringRef dir = llvm::sys::path::parent_path(path);
  for (const PEDecl &decl : peDecls) {
    llvm::SmallString<256> file(decl.file);
    if (!llvm::sys::path::is_absolute(file) && !dir.empty()) {
      file = dir;
      llvm::sys::path::append(file, decl.file);
    }
    std::optional<unsigned> pebuf = loadFile(file, loc(decl.fileLoc));
    if (!pebuf)
      return nullptr;
    if (!netil::assemble(sourceMgr, *pebuf, app, decl.name,
                         /*forceName=*/true))
      return nullptr;
  }
  builder.setInsertionPointToEnd(app.getBodyBlock());
  for (auto &[from, to] : connections) {
    auto ref = [&](const Endpoint &ep) -> SymbolRefAttr {
      Operation *node = app.lookupSymbol(ep.node);
      if (!node) {
        error(ep.loc) << "unknown NetPE, source or sink '" << ep.node << "'";
        return {};
      }
      if (auto pe = dyn_cast<PEOp>(node)) {
        if (ep.port.empty()) {
          error(ep.loc) << "name a port of NetPE '" << ep.node << "' as "
                        << ep.node << ".PORT";
          return {};
        }
        if (!pe.lookupPort(ep.port)) {
          auto diag = error(ep.loc) << "NetPE '" << ep.node << "' has no port '"
                                    << ep.port << "'";
          SmallVector<std::string> ports;
          for (PortOp p : pe.getPorts())
            ports.push_back(
                (p.getSymName() + " (" + stringifyPortKind(p.getKind()) + ")")
                    .str());
          diag << "; its ports: " << llvm::join(ports, ", ");
          return {};
        }
        return SymbolRefAttr::get(&context, ep.node,
                                  {FlatSymbolRefAttr::get(&context, ep.port)});
      }
      if (!ep.port.empty()) {
        error(ep.loc) << "'" << ep.node
                      << "' is a source or sink and has "
                         "no ports";
        return {};
      }
      return FlatSymbolRefAttr::get(&context, ep.node);
    };
    SymbolRefAttr f = ref(from), t = ref(to);
    if (f && t)
      ConnectOp::create(builder, loc(from.loc), f, t);
  }
  if (failed || mlir::failed(verify(*module)))
    return nullptr;
  return module;
}

OwningOpRef<ModuleOp> netvm::application::parseDescription(
    MLIRContext &context, llvm::SourceMgr &sourceMgr, unsigned bufferId,
    StringRef appName, FileLoader loadFile) {
  // Any context will do, not only the driver's, which has loaded netvm's
  // dialect already: the builders below would otherwise make unregistered
  // operations.
  context.loadDialect<NetVMDialect>();
  return DescriptionParser(context, sourceMgr, bufferId, loadFile)
      .parse(appName);
}
